"""The runner against llama.cpp's own server on CPU (tiny model built in the fixture)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from runner.bundle.schema import decode_bundle
from runner.client import Client
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.server_facts import ServerFacts, probe_server
from tests.engines.llama_server import (
    SLOTS,
    LlamaServer,
    make_tiny_gguf,
    start_llama_server,
)

pytestmark = pytest.mark.llama


def test_requests_queued_exactly_where_requests_exceed_slots(llama_server, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    options = Options(base_url=llama_server.base_url, contexts=[300], prefill_contexts=[300, 1000],
                      concurrency=[1, 2, 4, 8], duration=2.0, max_output=128, out=out,
                      launch_command=" ".join(llama_server.command) + " --api-key sk-llama-secret-0123456789")
    asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
    bundle = decode_bundle(out.read_bytes())
    assert bundle.engine.name == "llama.cpp"
    assert bundle.notes is None  # timings_per_token gave a running count: no chunk-counting caveat
    assert bundle.run.served_model and bundle.run.served_model.endswith("tiny.gguf")
    assert "sk-llama-secret" not in out.read_text() and "--api-key <redacted>" in bundle.launch_command
    cells = {c.concurrency: c for c in bundle.decode}
    assert cells[8].status == "Requests queued"
    # llama.cpp has no latency histograms to check against, so a client lagging on a busy machine
    # marks its cells Distorted, with the reason; on a quiet one they are Valid.
    assert all(cells[n].status == "Valid" or (cells[n].status == "Distorted" and cells[n].distortion)
               for n in (1, 2, 4)), {n: (c.status, c.distortion) for n, c in cells.items()}
    for cell in bundle.decode:
        assert cell.prompt_tokens == 300
        assert cell.total_tok_s and cell.total_tok_s > 0
        assert cell.output_tokens == pytest.approx(cell.total_tok_s * cell.measured_s, abs=1)
        assert cell.ttft_ms <= cell.ttft_p90_ms <= cell.ttft_p99_ms  # the tail beside the median
        assert cell.tbt_ms <= cell.tbt_p90_ms <= cell.tbt_p99_ms
    assert [p.prompt_tokens for p in bundle.prefill] == [300, 1000]
    assert all(p.status == "Valid" and p.prompt_tok_s > 0 for p in bundle.prefill)


def _probe(server: LlamaServer, launch_command: str | None) -> ServerFacts:
    """What the runner learns from `server`, told (or not) how it was launched."""
    async def probe() -> ServerFacts:
        client = Client(server.base_url, api_key=None)
        try:
            return await probe_server(client, None, ready_timeout=10, launch_command=launch_command)
        finally:
            await client.aclose()
    return asyncio.run(probe())


def test_kv_capacity_of_split_and_shared_slot_caches(llama_server, tmp_path: Path) -> None:
    """-c 8192 is the whole KV cache either way; the API alone cannot tell a shared one apart."""
    split = _probe(llama_server, " ".join(llama_server.command))
    assert (split.slots, split.max_model_len, split.kv_capacity) == (SLOTS, 8192 // SLOTS, 8192)
    shared = start_llama_server(make_tiny_gguf(tmp_path / "tiny.gguf"), tmp_path / "server.log", extra=("--kv-unified",))
    try:
        told = _probe(shared, " ".join(shared.command))
        untold = _probe(shared, None)
    finally:
        shared.process.terminate()
        shared.process.wait(timeout=10)
    assert (told.slots, told.max_model_len, told.kv_capacity) == (SLOTS, 8192, 8192)
    assert "shared" in told.kv_source
    assert untold.kv_capacity == SLOTS * 8192 and "--launch-command" in untold.kv_source


def test_chat_api_prompts_are_exact_and_tokens_match_the_servers_count(llama_server, tmp_path: Path) -> None:
    from tests.engines.chat_checks import check_chat_cells, measure_chat

    # Four slots of 2K each: contexts that leave room for the output.
    bundle = measure_chat(llama_server.base_url, tmp_path / "chat.json", contexts=[512, 1024], prefill_contexts=[512])
    check_chat_cells(bundle, "llama.cpp")
