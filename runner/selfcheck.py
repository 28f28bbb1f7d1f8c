"""The client checks itself during a decode window: event-loop lag, CPU use, bursty delivery.

A client that falls behind timestamps tokens late: a first token read 30 ms late adds 30 ms
to TTFT, and a stream read in one gulp looks like generation far faster than the server's.
These figures say whether that happened; runner.crosscheck weighs them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from runner.client import Trace

# The lag probe wakes this often; its lateness is what any token read at that moment suffered.
LAG_TICK_S = 0.005
# A token counts as bursty when it arrived less than this share of the server's mean
# inter-token latency after the one before it on the same stream.
BURST_FRACTION = 0.2


class LoopLag:
    """Samples how late the event loop runs: a task sleeps LAG_TICK_S and records its lateness."""

    def __init__(self) -> None:
        """No samples yet; start() begins sampling."""
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._cpu_start = 0.0
        self._wall_start = 0.0

    def start(self) -> None:
        """Begin sampling on the running loop and note the process's CPU time."""
        self._cpu_start, self._wall_start = time.process_time(), time.perf_counter()
        self._task = asyncio.create_task(self._probe())

    async def _probe(self) -> None:
        while True:
            due = time.perf_counter() + LAG_TICK_S
            await asyncio.sleep(LAG_TICK_S)
            self.lags.append(max(0.0, time.perf_counter() - due))

    async def stop(self) -> tuple[float | None, float | None, float]:
        """Stop sampling; (p99 lag, max lag, CPU share of one core) over the sampled time."""
        cpu = time.process_time() - self._cpu_start
        wall = max(time.perf_counter() - self._wall_start, 1e-9)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if not self.lags:
            return None, None, cpu / wall
        ordered = sorted(self.lags)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], ordered[-1], cpu / wall


def burst_share(traces: Sequence[Trace], start: float, end: float, itl_s: float | None) -> float | None:
    """Share of the window's tokens (after each stream's first) that arrived bursty; None without an ITL."""
    if not itl_s or itl_s <= 0:
        return None
    limit = BURST_FRACTION * itl_s
    bursty = total = 0
    for trace in traces:
        times, counts = trace.times, trace.counts
        for i in range(1, len(times)):
            if times[i] > end:
                break
            if times[i] < start:
                continue
            total += counts[i]
            bursty += counts[i] if times[i] - times[i - 1] < limit else 0
    return bursty / total if total else None
