"""The runner tells engines apart by what they answer, as their releases answer it.

Each case serves, over real HTTP, the endpoints one engine exposes, with bodies shaped as the
engine's own source writes them (trimmed to the fields that matter), and checks what
`probe_server` concludes: engine, version, max length, KV capacity and its source, queue gauge.
vLLM and llama.cpp are also measured live (the simulator speaks vLLM; tests/engines/test_llama_cpp.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from runner.client import Client
from runner.server_facts import ServerFacts, probe_server
from tests.builders import serve_folder


def _models(model: str, owned_by: str, **extra: Any) -> dict:
    """An OpenAI /v1/models list with one model."""
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": owned_by, **extra}]}


VLLM = {
    "v1/models": _models("Qwen/Qwen3-8B", "vllm", root="Qwen/Qwen3-8B", max_model_len=40960),
    "version": {"version": "0.11.0"},
    "metrics": "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
               "# TYPE vllm:cache_config_info gauge\n"
               'vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="27000"} 1.0\n'
               'vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 0.0\n',
}
SGLANG_TOP_LEVEL = {  # server_args and scheduler_info merged at the top, as 0.4 releases answer
    "v1/models": _models("Qwen/Qwen3-8B", "sglang", root="Qwen/Qwen3-8B", max_model_len=40960),
    "get_server_info": {"model_path": "Qwen/Qwen3-8B", "context_length": None, "tp_size": 1, "dp_size": 1,
                        "max_total_num_tokens": 411_000, "max_req_input_len": 40954,
                        "internal_states": [{"last_gen_throughput": 0.0}], "version": "0.4.6.post5"},
    "metrics": 'sglang:num_queue_reqs{model_name="Qwen/Qwen3-8B"} 0.0\n',
}
SGLANG_PER_RANK = {  # the pool size reported per data-parallel rank, two ranks
    "v1/models": _models("deepseek-ai/DeepSeek-V3", "sglang"),
    "get_server_info": {"model_path": "deepseek-ai/DeepSeek-V3", "context_length": 163840, "tp_size": 8, "dp_size": 2,
                        "internal_states": [{"max_total_num_tokens": 500_000}, {"max_total_num_tokens": 500_000}],
                        "version": "0.5.2"},
}
TGI = {
    "v1/models": _models("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
    "info": {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "model_sha": "0e9e39f", "model_pipeline_tag": "text-generation",
             "max_concurrent_requests": 128, "max_input_tokens": 8191, "max_total_tokens": 8192,
             "router": "text-generation-router", "version": "3.3.4", "sha": "9f3a4b1", "docker_label": "sha-9f3a4b1"},
    "metrics": "tgi_queue_size 0\ntgi_batch_current_size 0\n",
}
TENSORRT_LLM = {  # /metrics answers JSON iteration statistics, not Prometheus text
    "v1/models": _models("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "tensorrt_llm"),
    "version": {"version": "1.0.0"},
    "metrics": [{"gpuMemUsage": 1, "iter": 3, "numActiveRequests": 0}],
}


def _probe(tmp_path: Path, endpoints: dict[str, Any], kv_capacity: int | None = None) -> ServerFacts:
    """Serve `endpoints` (path → body) over HTTP and probe them as the runner would."""
    for path, body in endpoints.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body if isinstance(body, str) else json.dumps(body))

    async def probe(base_url: str) -> ServerFacts:
        client = Client(base_url, api_key=None)
        try:
            return await probe_server(client, None, ready_timeout=5, kv_capacity=kv_capacity)
        finally:
            await client.aclose()

    served = serve_folder(tmp_path)
    try:
        return asyncio.run(probe(next(served) + "v1"))
    finally:
        served.close()


@pytest.mark.parametrize(("endpoints", "expected"), [
    (VLLM, ("vllm", "0.11.0", 40960, 27000 * 16, "vllm:cache_config_info", True)),
    (SGLANG_TOP_LEVEL, ("sglang", "0.4.6.post5", 40960, 411_000, "sglang /get_server_info", True)),
    (SGLANG_PER_RANK, ("sglang", "0.5.2", 163840, 1_000_000, "sglang /get_server_info", False)),
    (TGI, ("tgi", "3.3.4", 8192, None, None, True)),
    (TENSORRT_LLM, ("tensorrt-llm", "1.0.0", None, None, None, False)),
], ids=["vllm", "sglang-0.4", "sglang-data-parallel", "tgi", "tensorrt-llm"])
def test_engine_facts(tmp_path: Path, endpoints: dict[str, Any], expected: tuple) -> None:
    facts = _probe(tmp_path, endpoints)
    assert (facts.engine, facts.version, facts.max_model_len, facts.kv_capacity, facts.kv_source,
            facts.queue_gauge) == expected
    assert facts.model == endpoints["v1/models"]["data"][0]["id"]


def test_tgi_is_asked_to_stop_at_end_of_sequence_as_it_cannot_ignore_it(tmp_path: Path) -> None:
    assert _probe(tmp_path, TGI).ignore_eos is False
    assert _probe(tmp_path / "vllm", VLLM).ignore_eos is True


def test_kv_capacity_flag_wins_over_the_server(tmp_path: Path) -> None:
    facts = _probe(tmp_path, SGLANG_TOP_LEVEL, kv_capacity=100_000)
    assert (facts.kv_capacity, facts.kv_source) == (100_000, "--kv-capacity")
