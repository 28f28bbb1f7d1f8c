"""Prometheus text exposition of the engine's state, under vLLM's metric names."""

from __future__ import annotations

from runner.simulator.config import SimConfig
from runner.simulator.engine import EngineStats


def _labels(pairs: dict[str, str]) -> str:
    """Prometheus label set `{k="v",...}` with values escaped."""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    """A label value with backslash, quote and newline escaped as Prometheus requires."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_metrics(config: SimConfig, stats: EngineStats) -> str:
    """The /metrics page: gauges, counters and cache_config_info as vLLM names them."""
    base = {"engine": "0", "model_name": config.model}
    cache_info = {
        "block_size": str(config.block_size),
        "cache_dtype": "auto",
        "enable_prefix_caching": str(config.enable_prefix_caching),
        "engine": "0",
        "gpu_memory_utilization": "0.9",
        "num_cpu_blocks": "0",
        "num_gpu_blocks": str(config.num_gpu_blocks),
    }
    families: list[tuple[str, str, str, list[tuple[dict[str, str], float]]]] = [
        ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
         [(base, stats.running)]),
        ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
         [(base, stats.waiting)]),
        ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
         [(base, stats.kv_usage)]),
        ("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
         [(base, stats.prompt_tokens_total)]),
        ("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
         [(base, stats.generation_tokens_total)]),
        ("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of tokens.",
         [(base, stats.prefix_cache_queries_total)]),
        ("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of tokens.",
         [(base, stats.prefix_cache_hits_total)]),
        ("vllm:request_success_total", "counter", "Count of successfully processed requests.",
         [({**base, "finished_reason": reason}, stats.finished_total.get(reason, 0))
          for reason in ("stop", "length", "abort")]),
        ("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig",
         [(cache_info, 1)]),
    ]
    lines: list[str] = []
    for name, kind, help_text, samples in families:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{_labels(labels)} {float(value)}" for labels, value in samples)
    histograms = (
        ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", stats.ttft),
        ("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", stats.itl),
        ("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", stats.queue_time),
    )
    for name, help_text, histogram in histograms:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} histogram")
        lines.extend(f"{name}_bucket{_labels({**base, 'le': le})} {float(n)}" for le, n in histogram.cumulative())
        lines.append(f"{name}_count{_labels(base)} {float(histogram.count)}")
        lines.append(f"{name}_sum{_labels(base)} {histogram.sum}")
    return "\n".join(lines) + "\n"
