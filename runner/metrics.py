"""Prometheus text parsing and the engine metrics the runner reads from /metrics.

ENGINE_METRICS is the one table of engine-specific metric names: a row per engine, a column
per fact. A scrape is matched to the first row whose names it carries.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import msgspec
from prometheus_client.parser import text_string_to_metric_families

from runner.bundle.schema import MAX_TOKENS


class EngineMetrics(msgspec.Struct, frozen=True, kw_only=True):
    """What one engine calls each fact the runner reads; None where it exposes none."""

    engine: str
    waiting: str
    running: str
    # A counter of generated tokens that moves as they are generated.
    generated_tokens: str | None = None
    ttft_seconds: str | None = None
    itl_seconds: str | None = None
    queue_seconds: str | None = None
    # True where the ITL histogram counts every token after a request's first (its count is
    # tokens, not steps): then a window's tokens are its count plus the TTFT histogram's.
    itl_counts_tokens: bool = False
    # Speculative decoding: counters of drafts, drafted and accepted tokens, and accepted tokens by
    # draft position (label `position`); or, where the engine keeps only running means, gauges of
    # the acceptance length and rate.
    spec_drafts: str | None = None
    spec_draft_tokens: str | None = None
    spec_accepted: str | None = None
    spec_accepted_per_position: str | None = None
    spec_accept_length_gauge: str | None = None
    spec_accept_rate_gauge: str | None = None


ENGINE_METRICS: tuple[EngineMetrics, ...] = (
    EngineMetrics(engine="vllm", waiting="vllm:num_requests_waiting", running="vllm:num_requests_running",
                  generated_tokens="vllm:generation_tokens_total", ttft_seconds="vllm:time_to_first_token_seconds",
                  itl_seconds="vllm:inter_token_latency_seconds", queue_seconds="vllm:request_queue_time_seconds",
                  spec_drafts="vllm:spec_decode_num_drafts_total", spec_draft_tokens="vllm:spec_decode_num_draft_tokens_total",
                  spec_accepted="vllm:spec_decode_num_accepted_tokens_total",
                  spec_accepted_per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total"),
    # sglang:generation_tokens_total moves only when a request ends, by all its tokens at once, so a
    # window's tokens come from the histograms, which SGLang observes as each chunk goes out.
    EngineMetrics(engine="sglang", waiting="sglang:num_queue_reqs", running="sglang:num_running_reqs",
                  ttft_seconds="sglang:time_to_first_token_seconds", itl_seconds="sglang:inter_token_latency_seconds",
                  queue_seconds="sglang:queue_time_seconds", itl_counts_tokens=True,
                  spec_accept_length_gauge="sglang:spec_accept_length", spec_accept_rate_gauge="sglang:spec_accept_rate"),
    EngineMetrics(engine="llama.cpp", waiting="llamacpp:requests_deferred", running="llamacpp:requests_processing",
                  generated_tokens="llamacpp:tokens_predicted_total"),
    EngineMetrics(engine="tgi", waiting="tgi_queue_size", running="tgi_batch_current_size"),
)
# Waiting-queue and running-batch gauges by engine; the first one present in a scrape is used.
QUEUE_GAUGES = tuple(row.waiting for row in ENGINE_METRICS)
RUNNING_GAUGES = tuple(row.running for row in ENGINE_METRICS)

# vLLM's KV cache size, read by the probe.
CACHE_CONFIG_INFO = "vllm:cache_config_info"


class Sample(msgspec.Struct, frozen=True):
    """One sample line: metric name, its labels and its value."""

    name: str
    labels: dict[str, str]
    value: float


def _read_sample_names() -> frozenset[str]:
    """Every sample name the runner reads: ENGINE_METRICS' gauges, counters and histogram series."""
    names = {CACHE_CONFIG_INFO}
    for row in ENGINE_METRICS:
        names |= {row.waiting, row.running} | ({row.generated_tokens} - {None})
        names |= {name for name in (row.spec_drafts, row.spec_draft_tokens, row.spec_accepted,
                                    row.spec_accepted_per_position, row.spec_accept_length_gauge,
                                    row.spec_accept_rate_gauge) if name}
        for histogram_name in (row.ttft_seconds, row.itl_seconds, row.queue_seconds):
            if histogram_name:
                names |= {histogram_name + suffix for suffix in ("_bucket", "_sum", "_count")}
    return frozenset(names)


READ = _read_sample_names()


def _sample_name(line: str) -> str:
    """The metric name a sample line starts with (up to its labels or value)."""
    return line.split("{", 1)[0].split(None, 1)[0] if line.strip() else ""


def _samples(text: str) -> Iterator[Sample]:
    """The samples of exposition text, as prometheus_client parses them (label values unescaped)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            yield Sample(sample.name, dict(sample.labels), float(sample.value))


def parse_prometheus(text: str, names: Collection[str] | None = READ) -> list[Sample]:
    """The samples named in `names` (every sample for None), skipping comments and lines that do not parse.

    prometheus_client's parser reads the lines (it unescapes label values); only those the runner
    reads are handed to it, since a scrape is parsed on the client's event loop mid-window and the
    parser is slow: a whole vLLM page costs it several times what the few samples read do.
    """
    lines = [line for line in text.splitlines()
             if line and not line.startswith("#") and (names is None or _sample_name(line) in names)]
    try:
        return list(_samples("\n".join(lines) + "\n"))
    except ValueError:  # one bad line: parse them one by one and leave it out
        kept = []
        for line in lines:
            try:
                kept.extend(_samples(line + "\n"))
            except ValueError:
                continue
        return kept


def _gauge(samples: list[Sample], names: tuple[str, ...]) -> float | None:
    """The first of `names` present in a scrape, summed over its label sets; None if none is."""
    for gauge in names:
        values = [s.value for s in samples if s.name == gauge]
        if values:
            return sum(values)
    return None


def queue_length(samples: list[Sample]) -> float | None:
    """Requests waiting in the engine's queue, or None if no gauge says."""
    return _gauge(samples, QUEUE_GAUGES)


def busy_requests(samples: list[Sample]) -> float | None:
    """Requests running or waiting in the engine, or None if no running gauge says."""
    running = _gauge(samples, RUNNING_GAUGES)
    return None if running is None else running + (queue_length(samples) or 0)


def kv_capacity_tokens(samples: list[Sample]) -> int | None:
    """KV cache size in tokens from vLLM's cache_config_info (blocks × block size).

    A data-parallel vLLM reports one sample per engine (label `engine`), each with a cache of
    its own, so the capacity is their sum. Labels that are not positive whole numbers, or a sum
    past MAX_TOKENS, leave the capacity unknown rather than wrong.
    """
    per_engine: dict[str, int] = {}
    for sample in samples:
        if sample.name == CACHE_CONFIG_INFO:
            try:
                blocks, block_size = int(sample.labels["num_gpu_blocks"]), int(sample.labels["block_size"])
            except (KeyError, ValueError):
                return None
            if blocks <= 0 or block_size <= 0:
                return None
            per_engine[sample.labels.get("engine", "0")] = blocks * block_size
    total = sum(per_engine.values())
    return total if 0 < total <= MAX_TOKENS else None


def engine_metrics(samples: list[Sample]) -> EngineMetrics | None:
    """The row of ENGINE_METRICS whose gauges a scrape carries, or None for an engine not in it."""
    names = {s.name for s in samples}
    return next((row for row in ENGINE_METRICS if row.waiting in names or row.running in names), None)


def counter(samples: list[Sample], name: str | None) -> float | None:
    """A counter summed over its label sets, or None when the scrape lacks it."""
    return None if name is None else _gauge(samples, (name,))


def by_label(samples: list[Sample], name: str | None, label: str) -> dict[str, float]:
    """A counter's values by one label (summed over the others), e.g. accepted tokens by draft position."""
    found: dict[str, float] = {}
    for sample in samples:
        if sample.name == name and label in sample.labels:
            found[sample.labels[label]] = found.get(sample.labels[label], 0.0) + sample.value
    return found


class Histogram(msgspec.Struct, kw_only=True):
    """A Prometheus histogram summed over label sets: cumulative counts by upper bound, sum, count."""

    buckets: list[tuple[float, float]]
    sum: float
    count: float

    def minus(self, before: Histogram | None) -> Histogram:
        """The observations made since `before` (itself when there was none)."""
        if before is None:
            return self
        earlier = dict(before.buckets)
        return Histogram(buckets=[(le, n - earlier.get(le, 0.0)) for le, n in self.buckets],
                         sum=self.sum - before.sum, count=self.count - before.count)

    @property
    def mean(self) -> float | None:
        """The exact mean of the observations, or None without any."""
        return self.sum / self.count if self.count > 0 else None

    def quantile(self, q: float) -> float | None:
        """Estimate of the q-quantile, interpolated linearly inside its bucket as Prometheus does."""
        if self.count <= 0:
            return None
        rank, lower, below = q * self.count, 0.0, 0.0
        for le, cumulative in self.buckets:
            if cumulative >= rank:
                if le == float("inf"):
                    return lower
                inside = cumulative - below
                return lower + (le - lower) * ((rank - below) / inside if inside > 0 else 1.0)
            lower, below = le, cumulative
        return lower

    def share_above(self, seconds: float) -> float:
        """Share of the observations above `seconds`, counting from the first bucket bound at or above it."""
        if self.count <= 0:
            return 0.0
        at_or_below = next((n for le, n in self.buckets if le >= seconds), self.count)
        return max(0.0, (self.count - at_or_below) / self.count)


def histogram(samples: list[Sample], name: str | None) -> Histogram | None:
    """The histogram `name` (its _bucket, _sum and _count series), or None when the scrape lacks it."""
    if name is None:
        return None
    buckets: dict[float, float] = {}
    total = count = None
    for sample in samples:
        if sample.name == name + "_bucket":
            try:
                le = float(sample.labels["le"])
            except (KeyError, ValueError):
                continue
            buckets[le] = buckets.get(le, 0.0) + sample.value
        elif sample.name == name + "_sum":
            total = (total or 0.0) + sample.value
        elif sample.name == name + "_count":
            count = (count or 0.0) + sample.value
    if not buckets or total is None or count is None:
        return None
    return Histogram(buckets=sorted(buckets.items()), sum=total, count=count)
