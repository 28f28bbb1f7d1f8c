"""The chat API: prompts sized with the chat template, reasoning counted as output, auto's choice."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Iterator
from pathlib import Path

from runner.bundle.schema import decode_bundle
from runner.client import Client, Trace
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.prompts import request_body
from runner.simulator import SimConfig, running_simulator
from tests.engines.hostile_engine import JSON, hostile, sse, stream_tokens


def _measure(base_url: str, out: Path, api: str) -> None:
    options = Options(base_url=base_url, out=out, api=api, contexts=[1024, 2048], prefill_contexts=[1024],
                      concurrency=[1, 2], duration=0.5, max_output=32)
    asyncio.run(measure(options, progress=Progress(0, io.StringIO())))


def test_chat_prompts_are_exact_with_the_template_and_every_token_is_the_servers(tmp_path: Path) -> None:
    out = tmp_path / "chat.json"
    with running_simulator(SimConfig(max_model_len=8192)) as server:
        _measure(server.base_url, out, "chat")
    bundle = decode_bundle(out.read_bytes())
    assert bundle.run.api == "chat"
    assert bundle.prefill[0].prompt_tokens == 1024  # the simulator's own count of the templated prompt
    for cell in bundle.decode:
        assert cell.status == "Valid" and cell.prompt_tokens == cell.context_tokens
        assert cell.output_tokens == cell.server.generated_tokens


def test_auto_measures_completions_where_the_server_has_them(tmp_path: Path) -> None:
    out = tmp_path / "auto.json"
    with running_simulator(SimConfig(max_model_len=8192)) as server:
        _measure(server.base_url, out, "auto")
    assert decode_bundle(out.read_bytes()).run.api == "completions"


def test_auto_measures_chat_where_the_server_has_no_completions(tmp_path: Path) -> None:
    seen: list[str] = []

    def answer(body: dict) -> object:
        if body.get("model") == "hostile":  # only this run's requests, which name this server's one model
            seen.append("chat" if "messages" in body else "completions")
        return (404, JSON, b'{"detail": "Not Found"}') if "prompt" in body else stream_tokens(body)

    out = tmp_path / "chat-only.json"
    with hostile(completion=answer) as engine:
        _measure(engine.base_url, out, "auto")
    assert decode_bundle(out.read_bytes()).run.api == "chat"
    chosen = seen.index("chat")  # auto tries completions first and, once it has chosen chat, sends nothing else
    assert seen[0] == "completions" and set(seen[:chosen]) == {"completions"} and set(seen[chosen:]) == {"chat"}, seen


def _reasoning_stream(body: dict) -> Iterator[bytes]:
    """Three reasoning deltas (in both names servers use), then two of the answer, one token each."""
    deltas = [{"reasoning_content": "Let"}, {"reasoning": " me"}, {"reasoning_content": " think"},
              {"content": "Hi"}, {"content": "!"}]
    for index, delta in enumerate(deltas, 1):
        time.sleep(0.6 if "content" in delta and index == 4 else 0.01)  # the answer comes well after the thinking
        yield sse({"model": "hostile", "choices": [{"index": 0, "delta": delta,
                                                     "finish_reason": "length" if index == len(deltas) else None}]})
    yield b"data: [DONE]\n\n"


def test_reasoning_deltas_count_as_output_and_ttft_runs_to_the_first_of_either_kind() -> None:
    async def stream() -> Trace:
        client = Client(engine.base_url, api_key=None)
        try:
            return await client.stream(request_body("hostile", False, "Hello", 5, api="chat"), Trace())
        finally:
            await client.aclose()

    with hostile(completion=lambda body: _reasoning_stream(body)) as engine:
        trace = asyncio.run(stream())
    assert trace.tokens == 5 and trace.finished and trace.counted_by == "chunks"
    assert trace.first_token_at - trace.start < 0.4  # the first reasoning delta, not the answer's (0.6 s later)
