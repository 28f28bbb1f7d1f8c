"""A GPU energy meter read around one decode window, and the rules that judge its reading.

Every GPU's energy counter (millijoules since its driver loaded) is read at the window's start
and end; the joules are the sum of the GPUs' differences. In between, the GPUs are read again
every SAMPLE_INTERVAL_S, so that a stretch without a fresh reading, a GPU that comes or goes, or
a counter that starts over cannot pass for a measurement. A source (runner.energy.nvml,
runner.energy.dcgm) only says how to read every GPU once.

A counter moves in steps (NVML's about every 100 ms, a DCGM exporter's once per collect
interval), so each end of the window may be off by one step: about 0.2 s of power in all with
NVML, under 1 % of a 30 s window. Windows under MIN_WINDOW_S, where that reaches 10 %, are
judged invalid.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from runner.bundle.schema import EnergyCheck
from runner.bundle.terminal_text import printable

# The longest stretch a GPU may go without a fresh reading, the window's edges included.
MAX_GAP_S = 3.0
# How often the GPUs are read during the window.
SAMPLE_INTERVAL_S = 0.25
# The shortest window whose reading is valid: one counter step at each end is then at most 10 %.
MIN_WINDOW_S = 2.0
# The longest one read of every GPU may take before it is given up.
READ_TIMEOUT_S = 2.0
# A read slower than this answered from an unknown moment of its round trip: it counts as failed.
SLOW_READ_S = 0.5
# Characters of a source's text (a GPU's id, an error) that a reason quotes.
QUOTE_CHARS = 120


class EnergyUnavailable(Exception):
    """No meter can be made here: why, in one line for the user."""


class ReadFailed(Exception):
    """One read of the GPUs failed: why, in one line."""


@dataclass(frozen=True, slots=True)
class GpuReading:
    """One GPU read once: its number as the source gives it, its energy counter and its power."""

    index: str
    energy_mj: float
    power_w: float


# One read of every GPU, keyed by GPU UUID; raises ReadFailed. No GPU at all is a failed read.
Read = Callable[[], Awaitable[dict[str, GpuReading]]]


class _Track:
    """One GPU over the window: its counter at the start and at its latest fresh reading, and the gaps."""

    __slots__ = ("label", "start_mj", "last_mj", "last_at", "samples", "stale", "absent", "max_gap", "reset")

    def __init__(self, label: str, at: float, energy_mj: float) -> None:
        """Start at the window's first reading, taken `at` (perf_counter seconds)."""
        self.label = label
        self.start_mj = self.last_mj = energy_mj
        self.last_at = at
        self.samples = self.stale = self.absent = 0
        self.max_gap = 0.0
        self.reset = False

    def add(self, at: float, energy_mj: float) -> bool:
        """Take a reading; False when it is not fresh: a counter that has not moved is the source's last
        reading served again, which says nothing of the time since."""
        if energy_mj == self.last_mj:
            self.stale += 1
            return False
        self.reset |= energy_mj < self.last_mj
        self.max_gap = max(self.max_gap, at - self.last_at)
        self.last_mj, self.last_at = energy_mj, at
        return True


def _label(key: str, gpu: GpuReading) -> str:
    """How a reason names a GPU: its number, and its UUID where that is a different name."""
    name = printable(f"GPU {gpu.index}", QUOTE_CHARS)
    return name if key == gpu.index else f"{name} ({printable(key, QUOTE_CHARS)})"


class Tally:
    """The readings of one window as they come, and the verdict on them (no I/O, no clock of its own):
    `sample` during the window, `finish` at its end, then `check`."""

    def __init__(self, at: float, gpus: dict[str, GpuReading]) -> None:
        """Start from the reading of every GPU at the window's start, taken `at`."""
        self.started_at = at
        self.tracks = {key: _Track(_label(key, gpu), at, gpu.energy_mj) for key, gpu in gpus.items()}
        self.failures = 0
        self.last_failure: str | None = None
        self.ended_at: float | None = None
        self.end: dict[str, GpuReading] | ReadFailed | None = None

    def sample(self, at: float, gpus: dict[str, GpuReading]) -> None:
        """One reading mid-window; a GPU it lacks, or did not have at the start, gets no sample."""
        for key, track in self.tracks.items():
            gpu = gpus.get(key)
            if gpu is None:
                track.absent += 1
            elif track.add(at, gpu.energy_mj):
                track.samples += 1

    def failed(self, reason: str) -> None:
        """One reading mid-window failed: a gap for every GPU, never a zero."""
        self.failures += 1
        self.last_failure = reason

    def finish(self, at: float, end: dict[str, GpuReading] | ReadFailed) -> None:
        """The reading at the window's end (or why it failed), taken `at`; the gaps run up to it."""
        self.ended_at, self.end = at, end
        if not isinstance(end, ReadFailed):
            for key, gpu in end.items():
                if key in self.tracks:
                    self.tracks[key].add(at, gpu.energy_mj)
        for track in self.tracks.values():
            track.max_gap = max(track.max_gap, at - track.last_at)

    def check(self, source: str, output_tokens: int, total_tokens: int) -> EnergyCheck:
        """The finished window's reading, with the tokens it produced.

        `power_samples` is the fewest fresh readings any GPU had between the window's start and
        end, `max_sample_gap_s` the longest stretch any GPU went without one. An invalid reading
        keeps what it can say (GPUs, seconds, samples, the longest gap) but no joules nor anything
        made of them: with a GPU missing or a counter reset, a sum would pass for a measurement it
        is not.
        """
        end = self.end
        if self.ended_at is None or end is None:
            raise RuntimeError("Tally.check() before finish()")
        seconds = self.ended_at - self.started_at
        known = {"source": source, "gpus": len(self.tracks), "seconds": seconds,
                 "power_samples": min(track.samples for track in self.tracks.values()),
                 "max_sample_gap_s": max(track.max_gap for track in self.tracks.values())}
        if isinstance(end, ReadFailed):
            return EnergyCheck(valid=False, invalid_reason=f"could not read the GPUs at the window's end: {end}", **known)
        reason = self._problem(end, seconds)
        if reason is not None:
            return EnergyCheck(valid=False, invalid_reason=reason, **known)
        joules = sum(end[key].energy_mj - track.start_mj for key, track in self.tracks.items()) / 1000
        return EnergyCheck(valid=True, joules=joules, mean_watts_per_gpu=joules / seconds / len(self.tracks),
                           joules_per_output_token=joules / output_tokens if output_tokens else None,
                           joules_per_token=joules / total_tokens if total_tokens else None, **known)

    def _problem(self, end: dict[str, GpuReading], seconds: float) -> str | None:
        """Why the reading is not valid, in one line (the first problem found); None when it is."""
        missing = [track.label for key, track in self.tracks.items() if key not in end]
        if missing:
            return f"{missing[0]} is missing at the window's end ({len(missing)} of {len(self.tracks)} GPUs)"
        added = [_label(key, gpu) for key, gpu in end.items() if key not in self.tracks]
        if added:
            return f"{added[0]} appeared during the window ({len(added)} of {len(end)} GPUs at its end)"
        reset = next((track for track in self.tracks.values() if track.reset), None)
        if reset is not None:
            return f"{reset.label}: its energy counter went backwards (a reset of the GPU or its driver)"
        worst = max(self.tracks.values(), key=lambda track: track.max_gap)
        if worst.max_gap > MAX_GAP_S:
            return f"{worst.label}: no fresh reading for {worst.max_gap:.2f} s (at most {MAX_GAP_S:g} s){self._why(worst)}"
        still = next((track for key, track in self.tracks.items() if end[key].energy_mj == track.start_mj), None)
        if still is not None:
            return f"{still.label}: its energy counter did not advance during the window"
        if seconds < MIN_WINDOW_S:
            return (f"the window of {seconds:.2f} s is too short for the energy counters, which move in steps "
                    f"(NVML's about every 100 ms): {MIN_WINDOW_S:g} s at least")
        return None

    def _why(self, track: _Track) -> str:
        """What lay behind a GPU's gap: failed reads, reads without the GPU, or a counter that stood still."""
        if self.failures:
            return f"; {self.failures} reads failed, the last: {self.last_failure}"
        if track.absent:
            return f"; {track.absent} reads did not have it"
        if track.stale:
            return f"; its counter stood still across {track.stale} reads: its source updates it too seldom"
        return ""


@dataclass(frozen=True)
class WindowEnergy:
    """One window's readings, taken as it ended: `check` judges them with the tokens the window produced."""

    source: str
    tally: Tally | ReadFailed  # ReadFailed: the read at the window's start failed

    @property
    def started_at(self) -> float | None:
        """When the start's reading was taken (perf_counter seconds, the middle of its read)."""
        return None if isinstance(self.tally, ReadFailed) else self.tally.started_at

    @property
    def ended_at(self) -> float | None:
        """When the end's reading was taken, likewise: the joules cover started_at to ended_at."""
        return None if isinstance(self.tally, ReadFailed) else self.tally.ended_at

    def check(self, output_tokens: int, total_tokens: int) -> EnergyCheck:
        """The window's EnergyCheck: its figures per token where the reading is valid, else why not."""
        if isinstance(self.tally, ReadFailed):
            return EnergyCheck(source=self.source, valid=False,
                               invalid_reason=f"could not read the GPUs at the window's start: {self.tally}")
        return self.tally.check(self.source, output_tokens, total_tokens)


class EnergyMeter:
    """The GPUs' energy over a window: `start()` just before it starts, `stop()` as soon as it ends,
    `cancel()` where it is given up. One meter serves every window of a run, one at a time."""

    def __init__(self, source: str, read: Read, interval: float = SAMPLE_INTERVAL_S) -> None:
        """Read the GPUs with `read` every `interval` seconds; `source` names where the readings come from."""
        self.source = source
        self._read = read
        self._interval = interval
        self._tally: Tally | ReadFailed | None = None
        self._sampler: asyncio.Task[None] | None = None

    async def _timed_read(self) -> tuple[float, dict[str, GpuReading] | ReadFailed]:
        """One read of every GPU, bounded by READ_TIMEOUT_S, and when it was taken (its middle)."""
        before = time.perf_counter()
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                found: dict[str, GpuReading] | ReadFailed = await self._read() or ReadFailed("no GPU found")
        except TimeoutError:
            found = ReadFailed(f"no reading within {READ_TIMEOUT_S:g} s")
        except ReadFailed as exc:
            found = exc
        after = time.perf_counter()
        if after - before > SLOW_READ_S and not isinstance(found, ReadFailed):
            found = ReadFailed(f"a read took {after - before:.2f} s, more than {SLOW_READ_S:g} s: its moment is unknown")
        return (before + after) / 2, found

    async def start(self) -> None:
        """Read every GPU at the window's start, then sample them in the background until `stop`."""
        self.cancel()
        at, found = await self._timed_read()
        self._tally = found if isinstance(found, ReadFailed) else Tally(at, found)
        if isinstance(self._tally, Tally):
            self._sampler = asyncio.create_task(self._sample(self._tally))

    async def _sample(self, tally: Tally) -> None:
        """Read every GPU each interval into `tally` until cancelled; a failed read is told as one."""
        while True:
            await asyncio.sleep(self._interval)
            at, found = await self._timed_read()
            if isinstance(found, ReadFailed):
                tally.failed(str(found))
            else:
                tally.sample(at, found)

    async def stop(self) -> WindowEnergy:
        """Stop sampling and read every GPU at the window's end; the tokens come later, to `check`."""
        self.cancel()
        tally = self._tally
        if tally is None:
            raise RuntimeError("EnergyMeter.stop() without start()")
        self._tally = None
        if isinstance(tally, Tally):
            tally.finish(*await self._timed_read())
        return WindowEnergy(self.source, tally)

    def cancel(self) -> None:
        """Stop sampling without a reading (a window given up); harmless when none is under way."""
        if self._sampler is not None:
            self._sampler.cancel()
            self._sampler = None
