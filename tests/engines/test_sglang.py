"""The runner against a real SGLang server on CPU (tiny Llama made in the fixture)."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import msgspec
import pytest

from runner import metrics
from runner.bundle.schema import Bundle, ClientCheck, ServerCheck, decode_bundle
from runner.client import Client, Trace
from runner.crosscheck import PER_REQUEST_TOLERANCE
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.prompts import request_body
from runner.server_facts import ServerFacts, probe_server
from tests.builders import FIGURES
from tests.engines.sglang_server import (
    KV_TOKENS,
    MAX_OUTPUT,
    MAX_RUNNING,
    STREAM_INTERVAL,
    SglangServer,
    installed_version,
)

pytestmark = pytest.mark.sglang

CONTEXTS, CONCURRENCY = (1024, 2048), (1, 4, 8)
WINDOW_S = 4.0


def counter(server: SglangServer, name: str) -> float:
    """One of the server's counters right now, summed over its label sets."""
    return sum(s.value for s in metrics.parse_prometheus(server.metrics(), None) if s.name == name)


def _probe(server: SglangServer) -> ServerFacts:
    async def probe() -> ServerFacts:
        client = Client(server.base_url, api_key=None)
        try:
            return await probe_server(client, None, ready_timeout=10, launch_command=" ".join(server.command))
        finally:
            await client.aclose()
    return asyncio.run(probe())


def test_probe_reads_engine_version_kv_pool_and_queue_gauge(sglang_server: SglangServer) -> None:
    facts = _probe(sglang_server)
    assert (facts.engine, facts.version) == ("sglang", installed_version())
    assert (facts.kv_capacity, facts.kv_source) == (KV_TOKENS, "sglang /get_server_info")
    assert facts.max_model_len == 8192  # the tiny Llama's max_position_embeddings
    assert facts.queue_gauge


def test_usage_counts_every_token_when_chunks_carry_several(sglang_server: SglangServer) -> None:
    """--stream-interval 2: after the first, every chunk carries two tokens or more (SGLang joins what
    its HTTP side has not sent yet); usage still counts each one, as SGLang's own counter does."""
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
    assert min(trace.counts[1:-1]) >= STREAM_INTERVAL and len(trace.counts) <= 1 + MAX_OUTPUT / STREAM_INTERVAL


class Matrix(msgspec.Struct):
    """The judging matrix's bundle, and SGLang's token accounting over the whole run."""

    bundle: Bundle
    generated: float  # change of sglang:generation_tokens_total, credited as each request ends
    observed: float  # change of the TTFT and ITL histogram counts: one observation per token


def token_accounting(server: SglangServer) -> tuple[float, float]:
    """(generation_tokens_total, TTFT count + ITL count) right now."""
    samples = metrics.parse_prometheus(server.metrics(), None)  # the runner reads no generation_tokens_total
    ttft = metrics.histogram(samples, "sglang:time_to_first_token_seconds")
    itl = metrics.histogram(samples, "sglang:inter_token_latency_seconds")
    observed = (ttft.count if ttft else 0) + (itl.count if itl else 0)
    return metrics.counter(samples, "sglang:generation_tokens_total") or 0, observed


@pytest.fixture(scope="module")
def matrix(sglang_server: SglangServer, tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    """The judging matrix measured once (contexts 1K and 2K, concurrency 1, 4 and 8), then SGLang's
    accounting once the requests the windows cut off have ended."""
    out = tmp_path_factory.mktemp("sglang-run") / "run.json"
    options = Options(base_url=sglang_server.base_url, contexts=list(CONTEXTS), prefill_contexts=list(CONTEXTS),
                      concurrency=list(CONCURRENCY), duration=WINDOW_S, max_output=MAX_OUTPUT, out=out,
                      launch_command=" ".join(sglang_server.command))
    generated, observed = token_accounting(sglang_server)
    asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
    deadline = time.monotonic() + 30
    while True:  # the counter lags the histograms until every aborted request has ended
        now = token_accounting(sglang_server)
        if now[0] - generated == now[1] - observed or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return Matrix(decode_bundle(out.read_bytes()), now[0] - generated, now[1] - observed)


def expected_status(context: int, concurrency: int) -> str:
    """Where the server's limits put a cell: the KV pool first, then the running-requests cap."""
    if concurrency * (context + MAX_OUTPUT) > KV_TOKENS:
        return "Over capacity"
    return "Requests queued" if concurrency > MAX_RUNNING else "Valid"


def test_matrix_statuses_are_where_the_limits_put_them(matrix: Matrix) -> None:
    cells = {(c.context_tokens, c.concurrency): c for c in matrix.bundle.decode}
    FIGURES.append("SGLang matrix: " + ", ".join(f"{c // 1024}K × {n} {cell.status}" + (
        f" ({cell.distortion})" if cell.distortion else "") for (c, n), cell in sorted(cells.items())))
    limited = {key: expected_status(*key) for key in cells if expected_status(*key) != "Valid"}
    assert limited == {(1024, 8): "Requests queued", (2048, 8): "Over capacity"}
    assert {key: cells[key].status for key in limited} == limited
    free = [cell for key, cell in cells.items() if key not in limited]
    # A busy machine may distort a window (the cell then says why); it must not make a queue or hide one.
    assert all(c.status == "Valid" or (c.status == "Distorted" and c.distortion) for c in free)
    assert sum(c.status == "Valid" for c in free) >= len(free) / 2
    assert cells[1024, 8].server.running_mean <= MAX_RUNNING
    assert [(p.prompt_tokens, p.status) for p in matrix.bundle.prefill] == [(c, "Valid") for c in CONTEXTS]


def test_matrix_counts_tokens_from_usage(matrix: Matrix) -> None:
    bundle = matrix.bundle
    assert bundle.engine.name == "sglang" and bundle.engine.version == installed_version()
    assert bundle.notes is None  # counted from usage: no chunk-counting caveat on the page
    for cell in bundle.decode:
        if cell.status == "Over capacity":
            continue
        assert cell.prompt_tokens == cell.context_tokens
        assert cell.output_tokens == pytest.approx(cell.total_tok_s * cell.measured_s, abs=1)
        assert cell.output_tokens > cell.concurrency * STREAM_INTERVAL


def test_every_window_against_sglangs_own_counters_and_histograms(matrix: Matrix) -> None:
    """Each window's tokens, inter-token latency and TTFT beside SGLang's, which counts them as chunks go out.

    SGLang's generation_tokens_total moves only when a request ends, so over the whole run (once
    the requests the windows cut off have ended) it equals the histograms' count: the identity
    the per-window check rests on.
    """
    assert matrix.generated == matrix.observed > 0
    window_tokens = server_tokens = 0
    for cell in matrix.bundle.decode:
        key = f"{cell.context_tokens // 1024}K × {cell.concurrency}"
        if cell.status == "Over capacity":
            continue
        server, client = cell.server, cell.client
        assert isinstance(server, ServerCheck) and isinstance(client, ClientCheck), key
        assert server.metrics == "sglang" and server.generated_tokens and server.itl_per_token_ms, key
        off = cell.output_tokens / server.generated_tokens - 1
        FIGURES.append(f"SGLang {key}: {cell.status}, {cell.per_request_tok_s:,.1f} tok/s per request against "
                       f"{1000 / server.itl_per_token_ms:,.1f} from SGLang's ITL histogram; output tokens {off:+.2%} "
                       f"of SGLang's count; TTFT {cell.ttft_ms:,.1f} ms, SGLang's mean {server.ttft_mean_ms:,.1f} ms; "
                       f"{client.attempts} window(s)")
        if cell.status == "Distorted":
            continue
        window_tokens += cell.output_tokens
        server_tokens += server.generated_tokens
        assert abs(off) <= 0.01, key
        if cell.status == "Valid":  # plausible against SGLang's histogram, streams really active
            assert cell.per_request_tok_s <= (1 + PER_REQUEST_TOLERANCE) * 1000 / server.itl_per_token_ms, key
            assert cell.avg_active >= 0.8 * cell.concurrency, key
            assert server.requests >= cell.concurrency, key
    FIGURES.append(f"SGLang windows: {window_tokens:,} output tokens, SGLang counted {server_tokens:,} "
                   f"({window_tokens / server_tokens - 1:+.2%}); generation_tokens_total over the run "
                   f"{matrix.generated:,.0f} = its histograms' {matrix.observed:,.0f}")
    assert window_tokens and abs(window_tokens / server_tokens - 1) <= 0.01


def test_chat_api_prompts_are_exact_and_tokens_match_sglangs_count(sglang_server: SglangServer, tmp_path: Path) -> None:
    from tests.engines.chat_checks import check_chat_cells, measure_chat

    check_chat_cells(measure_chat(sglang_server.base_url, tmp_path / "chat.json", duration=3.0), "SGLang")
