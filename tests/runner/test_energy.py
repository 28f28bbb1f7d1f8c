"""Energy per token (runner/energy/): the validity rules and arithmetic on readings given by hand, the
DCGM meter against a real HTTP exporter whose counters are known ramps (tests/engines/dcgm_exporter.py),
and the NVML meter against a stand-in pynvml module."""

from __future__ import annotations

import asyncio
import sys
import time
import types
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pytest

from runner.bundle.schema import EnergyCheck
from runner.client import Client
from runner.energy import EnergyMeter, EnergyUnavailable, dcgm_meter, nvml_meter
from runner.energy.dcgm import SCRAPE_TIMEOUT_S
from runner.energy.meter import READ_TIMEOUT_S, GpuReading, ReadFailed, Tally, WindowEnergy
from tests.engines.dcgm_exporter import DcgmExporter, running_exporter

OUTPUT_TOKENS, TOTAL_TOKENS = 1_000, 5_000
# The server the client talks to: never reached, the exporters are on other origins.
SERVER = "http://127.0.0.1:9/v1"
UUIDS = ("GPU-aaaa", "GPU-bbbb")
WATTS = [300.0, 450.0]


def _gpus(at: float) -> dict[str, GpuReading]:
    """Every GPU's reading at `at` seconds, its counter rising at WATTS from 7 MJ at 0."""
    return {uuid: GpuReading(index=str(index), energy_mj=7e9 + watts * 1000 * at, power_w=watts)
            for index, (uuid, watts) in enumerate(zip(UUIDS, WATTS))}


def _tally(end: float, step: float = 0.25, reading: Callable[[float], dict[str, GpuReading]] = _gpus,
           samples_until: float | None = None) -> Tally:
    """A tally of a window from 0 to `end` read every `step` seconds (until `samples_until`, if given)."""
    tally = Tally(0.0, reading(0.0))
    at = step
    while at < (end if samples_until is None else samples_until):
        tally.sample(at, reading(at))
        at += step
    return tally


def _judge(tally: Tally, at: float, end: dict[str, GpuReading] | ReadFailed, output_tokens: int = OUTPUT_TOKENS,
           total_tokens: int = TOTAL_TOKENS, source: str = "nvml") -> EnergyCheck:
    """The verdict on a window whose end is read `at`."""
    tally.finish(at, end)
    return tally.check(source, output_tokens, total_tokens)


def test_a_valid_window_sums_every_gpu_and_divides_by_tokens() -> None:
    check = _judge(_tally(10.0), 10.0, _gpus(10.0))
    assert check.valid and check.invalid_reason is None
    assert check.joules == pytest.approx(7500.0)
    assert check.joules_per_output_token == pytest.approx(7.5)
    assert check.joules_per_token == pytest.approx(1.5)
    assert check.mean_watts_per_gpu == pytest.approx(375.0)
    assert (check.gpus, check.seconds, check.power_samples) == (2, 10.0, 39)
    assert check.max_sample_gap_s == pytest.approx(0.25)
    msgspec.json.decode(msgspec.json.encode(check), type=EnergyCheck)  # within the schema's bounds


def test_a_window_without_output_tokens_has_no_joules_per_output_token() -> None:
    check = _judge(_tally(4.0), 4.0, _gpus(4.0), 0, 300)
    assert check.valid and check.joules_per_output_token is None and check.joules_per_token == pytest.approx(10.0)


def _invalid(check: EnergyCheck) -> str:
    """The reason of an invalid reading, after checking it carries no figure made of joules."""
    assert not check.valid and check.invalid_reason
    assert (check.joules, check.joules_per_token, check.joules_per_output_token, check.mean_watts_per_gpu) == (None,) * 4
    return check.invalid_reason


def test_a_gap_over_three_seconds_anywhere_invalidates_the_window() -> None:
    # No sample in the last 3.5 s: the gap runs to the window's end.
    check = _judge(_tally(10.0, samples_until=6.6), 10.0, _gpus(10.0))
    assert _invalid(check) == "GPU 0 (GPU-aaaa): no fresh reading for 3.50 s (at most 3 s)"
    assert (check.gpus, check.seconds, check.max_sample_gap_s) == (2, 10.0, pytest.approx(3.5))
    # From the start to the first sample.
    tally = Tally(0.0, _gpus(0.0))
    tally.sample(3.2, _gpus(3.2))
    assert "no fresh reading for 3.20 s" in _invalid(_judge(tally, 4.0, _gpus(4.0), 1, 1))
    # A gap of 3 s exactly is allowed.
    assert _judge(_tally(9.0, step=3.0), 9.0, _gpus(9.0), 1, 1).valid


def test_failed_reads_are_gaps_and_say_why() -> None:
    tally = Tally(0.0, _gpus(0.0))
    for _ in range(16):
        tally.failed("HTTP 503 from http://node-a:9400/metrics")
    reason = _invalid(_judge(tally, 4.0, _gpus(4.0), 1, 1, "dcgm"))
    assert reason == ("GPU 0 (GPU-aaaa): no fresh reading for 4.00 s (at most 3 s); 16 reads failed, the last: "
                      "HTTP 503 from http://node-a:9400/metrics")


def test_a_counter_that_stands_still_gives_no_fresh_reading() -> None:
    # The source serves the same reading again (a DCGM exporter collecting every 30 s).
    def frozen(at: float) -> dict[str, GpuReading]:
        return _gpus(0.0 if at < 5.0 else at)

    reason = _invalid(_judge(_tally(5.0, reading=frozen), 5.0, _gpus(5.0), 1, 1, "dcgm"))
    assert reason == "GPU 0 (GPU-aaaa): no fresh reading for 5.00 s (at most 3 s); its counter stood still across 19 reads: " \
                     "its source updates it too seldom"


def test_a_counter_reset_invalidates_the_window_even_when_it_climbs_back() -> None:
    def reset_at_two(at: float) -> dict[str, GpuReading]:
        gpus = _gpus(at)
        if at >= 2.0:  # GPU 1 starts again from 0 mJ
            gpus["GPU-bbbb"] = GpuReading(index="1", energy_mj=450_000 * (at - 2.0), power_w=450.0)
        return gpus

    ended = reset_at_two(4.0)
    reason = _invalid(_judge(_tally(4.0, reading=reset_at_two), 4.0, ended, 1, 1))
    assert reason == "GPU 1 (GPU-bbbb): its energy counter went backwards (a reset of the GPU or its driver)"
    # A reset caught only by the end's reading.
    ended["GPU-bbbb"] = GpuReading(index="1", energy_mj=5.0, power_w=450.0)
    assert "went backwards" in _invalid(_judge(_tally(4.0), 4.0, ended, 1, 1))


def test_a_counter_that_never_moved_is_no_reading() -> None:
    # GPU 0's counter stands still all window, one short enough that its gap is no fault.
    def stuck(at: float) -> dict[str, GpuReading]:
        return {**_gpus(at), "GPU-aaaa": GpuReading(index="0", energy_mj=7e9, power_w=0.0)}

    reason = _invalid(_judge(_tally(2.5, reading=stuck), 2.5, stuck(2.5), 1, 1))
    assert reason == "GPU 0 (GPU-aaaa): its energy counter did not advance during the window"


def test_the_same_gpus_must_be_there_at_both_ends() -> None:
    end = _gpus(5.0)
    del end["GPU-bbbb"]
    reason = _invalid(_judge(_tally(5.0), 5.0, end, 1, 1))
    assert reason == "GPU 1 (GPU-bbbb) is missing at the window's end (1 of 2 GPUs)"
    tally = Tally(0.0, {"GPU-aaaa": _gpus(0.0)["GPU-aaaa"]})
    reason = _invalid(_judge(tally, 2.5, _gpus(2.5), 1, 1))
    assert reason == "GPU 1 (GPU-bbbb) appeared during the window (1 of 2 GPUs at its end)"


def test_a_window_under_two_seconds_is_too_short_for_the_counters() -> None:
    check = _judge(_tally(1.5), 1.5, _gpus(1.5))
    assert _invalid(check).startswith("the window of 1.50 s is too short for the energy counters")
    assert (check.gpus, check.seconds, check.power_samples) == (2, 1.5, 5)


def test_an_end_reading_that_failed_is_said() -> None:
    check = _judge(_tally(3.0), 3.0, ReadFailed("NVML answered no GPU: GPU 0 (GPU-aaaa): GPU is lost"), 1, 1)
    assert _invalid(check) == "could not read the GPUs at the window's end: NVML answered no GPU: GPU 0 (GPU-aaaa): GPU is lost"
    assert check.seconds == 3.0


def test_a_start_reading_that_failed_is_said_and_nothing_is_sampled() -> None:
    calls = []

    async def read() -> dict[str, GpuReading]:
        calls.append(time.perf_counter())
        raise ReadFailed("exporter down")

    async def window() -> EnergyCheck:
        meter = EnergyMeter("dcgm", read)
        await meter.start()
        await asyncio.sleep(0.3)
        return (await meter.stop()).check(OUTPUT_TOKENS, TOTAL_TOKENS)

    check = asyncio.run(window())
    assert _invalid(check) == "could not read the GPUs at the window's start: exporter down"
    assert len(calls) == 1


def test_a_slow_read_has_no_known_moment_and_counts_as_failed() -> None:
    delays = iter([0.0, 0.6])  # the start's read, then the end's

    async def read() -> dict[str, GpuReading]:
        await asyncio.sleep(next(delays))
        return _gpus(time.perf_counter())

    async def window() -> EnergyCheck:
        meter = EnergyMeter("nvml", read, interval=60.0)
        await meter.start()
        return (await meter.stop()).check(OUTPUT_TOKENS, TOTAL_TOKENS)

    reason = _invalid(asyncio.run(window()))
    assert reason.startswith("could not read the GPUs at the window's end: a read took 0.6")
    assert reason.endswith(" s, more than 0.5 s: its moment is unknown")


def test_one_meter_serves_window_after_window_and_cancel_stops_sampling() -> None:
    reads = []

    async def read() -> dict[str, GpuReading]:
        reads.append(time.perf_counter())
        return _gpus(reads[-1])

    async def windows() -> list[WindowEnergy]:
        meter = EnergyMeter("nvml", read, interval=0.05)
        readings = []
        for _ in range(2):
            await meter.start()
            await asyncio.sleep(0.3)
            readings.append(await meter.stop())
        await meter.start()
        await asyncio.sleep(0.1)
        meter.cancel()
        given_up = len(reads)
        await asyncio.sleep(0.3)
        assert len(reads) == given_up  # nothing read once the window was given up
        with pytest.raises(RuntimeError):
            await EnergyMeter("nvml", read).stop()
        return readings

    first, second = asyncio.run(windows())
    assert first.ended_at is not None and second.started_at is not None and first.ended_at < second.started_at
    for readings in (first, second):
        check = readings.check(OUTPUT_TOKENS, TOTAL_TOKENS)
        assert check.power_samples >= 2 and check.seconds is not None and 0.3 <= check.seconds < 1.0


# The DCGM meter against a real exporter.

def _dcgm_window(exporter: DcgmExporter, seconds: float,
                 events: Sequence[tuple[float, Callable[[], None]]] = ()) -> tuple[EnergyCheck, WindowEnergy, float]:
    """Meter one window of `seconds` through the exporter, doing each event's action at its time into
    the window; the verdict, the readings and how long `stop` took."""
    async def window() -> tuple[EnergyCheck, WindowEnergy, float]:
        client = Client(SERVER, None)
        try:
            meter = await dcgm_meter(client, [exporter.url])
            await meter.start()
            begun = time.perf_counter()
            for at, action in events:
                await asyncio.sleep(max(0.0, begun + at - time.perf_counter()))
                action()
            await asyncio.sleep(max(0.0, begun + seconds - time.perf_counter()))
            stopping = time.perf_counter()
            readings = await meter.stop()
            return readings.check(OUTPUT_TOKENS, TOTAL_TOKENS), readings, time.perf_counter() - stopping
        finally:
            await client.aclose()

    return asyncio.run(window())


def test_dcgm_joules_per_token_match_the_exporters_ramps() -> None:
    with running_exporter(WATTS) as exporter:
        check, readings, _ = _dcgm_window(exporter, 2.5)
    assert check.valid, check.invalid_reason
    assert readings.started_at is not None and readings.ended_at is not None
    expected = exporter.joules(readings.started_at, readings.ended_at)
    assert check.joules == pytest.approx(expected, rel=0.005)
    assert check.joules_per_token == pytest.approx(expected / TOTAL_TOKENS, rel=0.005)
    assert check.joules_per_output_token == pytest.approx(expected / OUTPUT_TOKENS, rel=0.005)
    assert check.mean_watts_per_gpu == pytest.approx(375.0, rel=0.005)
    assert check.source == exporter.url and check.gpus == 2
    assert check.seconds == pytest.approx(readings.ended_at - readings.started_at)
    assert check.power_samples >= 6 and check.max_sample_gap_s is not None and check.max_sample_gap_s < 1.0


def test_dcgm_counter_reset_mid_window_is_invalid() -> None:
    with running_exporter(WATTS) as exporter:
        check, _, _ = _dcgm_window(exporter, 0.8, [(0.4, lambda: exporter.reset(1))])
    assert _invalid(check) == (f"GPU 1 ({exporter.gpus[1].uuid}): its energy counter went backwards "
                               "(a reset of the GPU or its driver)")


def test_dcgm_gpu_missing_at_the_end_is_invalid() -> None:
    with running_exporter(WATTS) as exporter:
        check, _, _ = _dcgm_window(exporter, 0.6, [(0.5, lambda: exporter.drop(0))])
    assert _invalid(check) == f"GPU 0 ({exporter.gpus[0].uuid}) is missing at the window's end (1 of 2 GPUs)"
    assert check.gpus == 2 and check.seconds is not None and check.seconds >= 0.6


def test_dcgm_gpu_missing_mid_window_is_a_gap() -> None:
    with running_exporter(WATTS) as exporter:
        check, _, _ = _dcgm_window(exporter, 4.0, [(0.3, lambda: exporter.drop(1)), (3.7, lambda: exporter.restore(1))])
    reason = _invalid(check)
    assert reason.startswith(f"GPU 1 ({exporter.gpus[1].uuid}): no fresh reading for 3.")
    assert reason.endswith(" reads did not have it")
    assert check.max_sample_gap_s is not None and 3.0 < check.max_sample_gap_s < 4.0


def test_dcgm_exporter_going_silent_is_a_gap() -> None:
    with running_exporter(WATTS) as exporter:
        check, _, _ = _dcgm_window(exporter, 4.2, [(0.3, exporter.silence), (3.8, exporter.speak)])
    reason = _invalid(check)
    assert "no fresh reading for 3." in reason and "reads failed, the last:" in reason
    assert f"{exporter.url} did not finish within {SCRAPE_TIMEOUT_S:g} s" in reason


def test_dcgm_exporter_silent_at_the_end_is_bounded_in_time() -> None:
    with running_exporter(WATTS) as exporter:
        check, _, stopping = _dcgm_window(exporter, 0.5, [(0.4, exporter.silence)])
    assert _invalid(check).startswith("could not read the GPUs at the window's end: ")
    assert stopping < READ_TIMEOUT_S + 1.0


def test_dcgm_exporter_collecting_every_30_s_is_stale() -> None:
    with running_exporter(WATTS) as exporter:
        exporter.collect_interval_s = 30.0
        check, _, _ = _dcgm_window(exporter, 3.3)
    reason = _invalid(check)
    assert "no fresh reading for 3." in reason and "its counter stood still across" in reason


def test_dcgm_meter_is_unavailable_without_an_exporter() -> None:
    async def make(url: str) -> EnergyMeter:
        client = Client(SERVER, None)
        try:
            return await dcgm_meter(client, [url])
        finally:
            await client.aclose()

    with running_exporter(WATTS) as exporter:
        with pytest.raises(EnergyUnavailable, match="HTTP 404 from http://127.0.0.1:.*/nothing"):
            asyncio.run(make(exporter.url.replace("/metrics", "/nothing")))
        url = exporter.url
    with pytest.raises(EnergyUnavailable, match="cannot read the GPUs' energy from the DCGM exporter: cannot connect"):
        asyncio.run(make(url))


# The NVML meter against a stand-in pynvml.

class _FakeNvml(types.ModuleType):
    """pynvml's calls the meter makes, over GPUs whose counters are ramps on perf_counter."""

    class NVMLError(Exception):
        pass

    def __init__(self, watts: Sequence[float], init_error: str | None = None, unsupported: bool = False) -> None:
        super().__init__("pynvml")
        self.watts = list(watts)
        self.origin = time.perf_counter()
        self.init_error, self.unsupported = init_error, unsupported
        self.lost: set[int] = set()
        self.initialised = 0

    def nvmlInit(self) -> None:  # noqa: N802 (pynvml's names)
        if self.init_error:
            raise self.NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.initialised -= 1

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return len(self.watts)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetUUID(self, handle: int) -> Any:  # noqa: N802
        return UUIDS[handle].encode() if handle else UUIDS[handle]  # older bindings answer bytes

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:  # noqa: N802
        if self.unsupported:
            raise self.NVMLError("Not Supported")
        if handle in self.lost:
            raise self.NVMLError("GPU is lost")
        return int(9_000_000_000 + self.watts[handle] * 1000 * (time.perf_counter() - self.origin))

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:  # noqa: N802
        return int(self.watts[handle] * 1000)


def _nvml_window(fake: _FakeNvml, seconds: float, before_stop: Callable[[], None] = lambda: None
                 ) -> tuple[EnergyCheck, WindowEnergy]:
    async def window() -> tuple[EnergyCheck, WindowEnergy]:
        meter = nvml_meter()
        await meter.start()
        await asyncio.sleep(seconds)
        before_stop()
        readings = await meter.stop()
        return readings.check(OUTPUT_TOKENS, TOTAL_TOKENS), readings

    return asyncio.run(window())


def test_nvml_joules_per_token_match_the_ramps(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNvml(WATTS)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    check, readings = _nvml_window(fake, 2.2)
    assert check.valid, check.invalid_reason
    assert readings.started_at is not None and readings.ended_at is not None
    expected = sum(WATTS) * (readings.ended_at - readings.started_at)
    assert check.joules == pytest.approx(expected, rel=0.005)
    assert check.joules_per_token == pytest.approx(expected / TOTAL_TOKENS, rel=0.005)
    assert check.mean_watts_per_gpu == pytest.approx(375.0, rel=0.005)
    assert (check.source, check.gpus) == ("nvml", 2) and check.power_samples >= 6


def test_nvml_gpu_lost_is_missing_and_all_lost_fails_the_read(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNvml(WATTS)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    check, _ = _nvml_window(fake, 0.3, lambda: fake.lost.add(1))
    assert _invalid(check) == "GPU 1 (GPU-bbbb) is missing at the window's end (1 of 2 GPUs)"
    fake.lost.clear()
    check, _ = _nvml_window(fake, 0.3, lambda: fake.lost.update({0, 1}))
    assert _invalid(check).startswith("could not read the GPUs at the window's end: NVML answered no GPU: GPU ")


@pytest.mark.parametrize(("fake", "reason"), [
    (None, "nvidia-ml-py is not installed: pip install -e '.[gpu]'"),
    (_FakeNvml(WATTS, init_error="Driver Not Loaded"), "NVML did not start: Driver Not Loaded"),
    (_FakeNvml([]), "NVML sees no GPU"),
    (_FakeNvml(WATTS, unsupported=True), "GPU 0 (GPU-aaaa) has no energy counter or power reading in NVML: Not Supported"),
])
def test_nvml_meter_says_why_there_is_none(monkeypatch: pytest.MonkeyPatch, fake: _FakeNvml | None, reason: str) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake)  # None: the import fails
    with pytest.raises(EnergyUnavailable) as caught:
        nvml_meter()
    assert str(caught.value) == reason
    assert fake is None or fake.initialised == 0  # NVML shut down again where it started
