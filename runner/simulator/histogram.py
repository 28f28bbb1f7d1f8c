"""Prometheus histograms as vLLM keeps them: cumulative bucket counts, a sum and a count."""

from __future__ import annotations

import bisect

import msgspec

# vLLM's bucket bounds (seconds) for TTFT, inter-token latency and queue time.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
               40.0, 80.0)
QUEUE_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                 240.0, 480.0, 960.0, 1920.0, 7680.0)


class Histogram(msgspec.Struct, kw_only=False):
    """Observations counted per bucket (not cumulative: cumulative() adds them up)."""

    bounds: tuple[float, ...]
    counts: list[int] = msgspec.field(default_factory=list)
    sum: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        """One count per bound, plus +Inf."""
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, seconds: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds
        self.count += 1

    def copy(self) -> Histogram:
        """A snapshot that later observations leave alone."""
        return Histogram(self.bounds, list(self.counts), self.sum, self.count)

    def cumulative(self) -> list[tuple[str, int]]:
        """(le label, cumulative count) for every bucket, +Inf last, as Prometheus exposes them."""
        labels = [repr(float(b)) for b in self.bounds] + ["+Inf"]
        running, rows = 0, []
        for label, count in zip(labels, self.counts):
            running += count
            rows.append((label, running))
        return rows
