"""Prometheus text parsing and the engine gauges the runner reads from /metrics."""

from __future__ import annotations

import re

import msgspec

# Waiting-queue gauges by engine; the first one present in a scrape is used.
QUEUE_GAUGES = (
    "vllm:num_requests_waiting",
    "sglang:num_queue_reqs",
    "llamacpp:requests_deferred",
    "tgi_queue_size",
)
# Requests in the engine's running batch, by engine.
RUNNING_GAUGES = (
    "vllm:num_requests_running",
    "sglang:num_running_reqs",
    "llamacpp:requests_processing",
    "tgi_batch_current_size",
)

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Sample(msgspec.Struct, frozen=True):
    """One sample line: metric name, its labels and its value."""

    name: str
    labels: dict[str, str]
    value: float


def parse_prometheus(text: str) -> list[Sample]:
    """Parse Prometheus exposition text into samples, skipping comments and junk."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            continue
        name, labels, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        samples.append(Sample(name, dict(_LABEL.findall(labels or "")), number))
    return samples


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
    its own, so the capacity is their sum.
    """
    per_engine: dict[str, int] = {}
    for sample in samples:
        if sample.name == "vllm:cache_config_info":
            try:
                size = int(sample.labels["num_gpu_blocks"]) * int(sample.labels["block_size"])
            except (KeyError, ValueError):
                return None
            per_engine[sample.labels.get("engine", "0")] = size
    return sum(per_engine.values()) or None
