"""Prometheus text from the engines: queue length, KV capacity and busy requests."""

from __future__ import annotations

from runner.metrics import (
    busy_requests,
    kv_capacity_tokens,
    parse_prometheus,
    queue_length,
)


def test_prometheus_parsing() -> None:
    text = (
        "# HELP vllm:num_requests_waiting x\n"
        'vllm:num_requests_waiting{model_name="m"} 3.0\n'
        'vllm:cache_config_info{block_size="16",num_gpu_blocks="1000",other="a,b"} 1.0\n'
        "garbage line\n"
    )
    samples = parse_prometheus(text)
    assert queue_length(samples) == 3.0
    assert kv_capacity_tokens(samples) == 16000
    assert queue_length(parse_prometheus("llamacpp:requests_deferred 2\n")) == 2
    assert queue_length(parse_prometheus("other 1\n")) is None
    data_parallel = "".join(  # vLLM --data-parallel-size 2: a cache per engine
        f'vllm:cache_config_info{{block_size="16",engine="{e}",num_gpu_blocks="1000"}} 1.0\n' for e in (0, 1))
    assert kv_capacity_tokens(parse_prometheus(data_parallel)) == 32000
    assert busy_requests(parse_prometheus('vllm:num_requests_running{engine="0"} 2\n' 'vllm:num_requests_waiting 1\n')) == 3
    assert busy_requests(parse_prometheus("llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n")) == 0
    assert busy_requests(samples) is None  # a queue gauge alone does not say the engine is idle
