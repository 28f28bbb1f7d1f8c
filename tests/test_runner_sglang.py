"""The runner against a real SGLang server on CPU (tiny Llama made in the fixture)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from runner import metrics
from runner.client import Client, Trace
from runner.measure import measure
from runner.options import Options
from runner.probe import ServerFacts, probe_server
from runner.progress import Progress
from runner.prompts import request_body
from runner.schema import Bundle, decode_bundle
from tests.conftest import FIGURES
from tests.sglang_fixture import (  # noqa: F401
    KV_TOKENS, MAX_OUTPUT, MAX_RUNNING, SGLANG_PYTHON, STREAM_INTERVAL, SglangServer, sglang_server,
)

pytestmark = pytest.mark.sglang

CONTEXTS, CONCURRENCY = (1024, 2048), (1, 4, 8)
WINDOW_S = 4.0


def installed_version() -> str:
    """The sglang release in the venv, from its dist-info folder's name."""
    (info,) = SGLANG_PYTHON.parent.parent.glob("lib/python*/site-packages/sglang-*.dist-info")
    return info.name.removeprefix("sglang-").removesuffix(".dist-info")


def counter(server: SglangServer, name: str) -> float:
    """One of the server's counters right now, summed over its label sets."""
    return sum(s.value for s in metrics.parse_prometheus(server.metrics()) if s.name == name)


def _probe(server: SglangServer) -> ServerFacts:
    async def probe() -> ServerFacts:
        client = Client(server.base_url, api_key=None)
        try:
            return await probe_server(client, None, ready_timeout=10, launch_command=" ".join(server.command))
        finally:
            await client.aclose()
    return asyncio.run(probe())


def test_probe_reads_engine_version_kv_pool_and_queue_gauge(sglang_server: SglangServer) -> None:  # noqa: F811
    facts = _probe(sglang_server)
    assert (facts.engine, facts.version) == ("sglang", installed_version())
    assert (facts.kv_capacity, facts.kv_source) == (KV_TOKENS, "sglang /get_server_info")
    assert facts.max_model_len == 8192  # the tiny Llama's max_position_embeddings
    assert facts.queue_gauge


def test_usage_counts_every_token_when_chunks_carry_several(sglang_server: SglangServer) -> None:  # noqa: F811
    """--stream-interval 2: after the first, every chunk carries two tokens; usage still counts each one."""
    async def stream() -> Trace:
        client = Client(sglang_server.base_url, api_key=None)
        try:
            model = (await probe_server(client, None, ready_timeout=10)).model
            return await client.stream(request_body(model, False, "Hello", MAX_OUTPUT), Trace(), model)
        finally:
            await client.aclose()

    before = counter(sglang_server, "sglang:generation_tokens_total")
    trace = asyncio.run(stream())
    generated = counter(sglang_server, "sglang:generation_tokens_total") - before
    assert trace.counted_by == "usage"
    assert trace.tokens == sum(trace.counts) == generated == MAX_OUTPUT
    assert max(trace.counts) == STREAM_INTERVAL and len(trace.counts) <= 1 + MAX_OUTPUT // STREAM_INTERVAL


@pytest.fixture(scope="module")
def matrix(sglang_server: SglangServer, tmp_path_factory: pytest.TempPathFactory) -> Bundle:  # noqa: F811
    """The judging matrix measured once: contexts 1K and 2K, concurrency 1, 4 and 8."""
    out = tmp_path_factory.mktemp("sglang-run") / "run.json"
    options = Options(base_url=sglang_server.base_url, contexts=list(CONTEXTS), prefill_contexts=list(CONTEXTS),
                      concurrency=list(CONCURRENCY), duration=WINDOW_S, max_output=MAX_OUTPUT, out=out,
                      launch_command=" ".join(sglang_server.command))
    asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
    return decode_bundle(out.read_bytes())


def expected_status(context: int, concurrency: int) -> str:
    """Where the server's limits put a cell: the KV pool first, then the running-requests cap."""
    if concurrency * (context + MAX_OUTPUT) > KV_TOKENS:
        return "Over capacity"
    return "Requests queued" if concurrency > MAX_RUNNING else "Valid"


def test_matrix_statuses_are_where_the_limits_put_them(matrix: Bundle) -> None:
    statuses = {(c.context_tokens, c.concurrency): c.status for c in matrix.decode}
    FIGURES.append("sglang matrix: " + ", ".join(f"{c // 1024}K×{n} {s}" for (c, n), s in sorted(statuses.items())))
    assert statuses == {(c, n): expected_status(c, n) for c in CONTEXTS for n in CONCURRENCY}
    assert statuses[(1024, 8)] == "Requests queued" and statuses[(2048, 8)] == "Over capacity"
    assert [(p.prompt_tokens, p.status) for p in matrix.prefill] == [(c, "Valid") for c in CONTEXTS]


def test_matrix_cells_count_tokens_from_usage(matrix: Bundle) -> None:
    assert matrix.engine.name == "sglang" and matrix.engine.version == installed_version()
    assert matrix.notes is None  # counted from usage: no chunk-counting caveat on the page
    for cell in matrix.decode:
        if cell.status == "Over capacity":
            continue
        assert cell.prompt_tokens == cell.context_tokens
        assert cell.output_tokens == pytest.approx(cell.total_tok_s * cell.measured_s, abs=1)
        assert cell.output_tokens > cell.concurrency * STREAM_INTERVAL
