"""--stall-timeout holds for streams that send bytes but no tokens, that never finish, or that never end a line."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest

from runner.client import Client, Trace
from runner.client.wire import MAX_LINE_BYTES
from runner.errors import RequestFailed
from tests.builders import FAULT_SIM, measure_with_faults, read_bundle
from tests.engines.scripted_server import JSON, MODELS, chunk, every, scripted

STALL_S = 0.5
STREAMS = {
    "keepalive comments only": (every(0.05, b": keepalive\n\n"), "no tokens from the server for 0.5 s"),
    "data chunks without text": (every(0.05, b'data: {"choices":[{"text":""}]}\n\n'), "no tokens from the server for 0.5 s"),
    "tokens that never finish": (every(0.001, chunk("x")), "without finishing (max_tokens 8)"),
    "bytes without a newline, slowly": (every(0.05, b"a" * 100), "no tokens from the server for 0.5 s"),
    "bytes without a newline, a flood": (every(0.0, b"a" * 65536), f"a line of more than {MAX_LINE_BYTES:,} bytes"),
    "a token, then only keepalives": (lambda: itertools.chain([chunk("x")], every(0.05, b": ping\n\n")()),
                                      "no tokens from the server for 0.5 s"),
}


@pytest.mark.parametrize("name", STREAMS)
def test_a_stream_that_makes_no_progress_fails_within_the_stall_timeout(name: str) -> None:
    stream, reason = STREAMS[name]

    async def request() -> None:
        client = Client(server.base_url, None, STALL_S)
        try:
            await client.stream({"model": "scripted", "prompt": "hi", "max_tokens": 8, "stream": True}, Trace())
        finally:
            await client.aclose()

    with scripted({"/v1/models": (200, JSON, MODELS), "/v1/completions": stream}) as server:
        started = time.monotonic()
        with pytest.raises(RequestFailed) as failed:
            asyncio.run(asyncio.wait_for(request(), 30))
    assert reason in str(failed.value)
    assert time.monotonic() - started < STALL_S + 5


def test_a_stream_that_finishes_is_not_cut_short() -> None:
    """The control: tokens a little slower than nothing at all, then the finish, are fine."""
    def stream():
        for _ in range(3):
            yield b": keepalive\n\n"
            yield chunk("x")
            time.sleep(0.1)
        yield chunk("", "length") + b"data: [DONE]\n\n"

    async def request() -> Trace:
        client = Client(server.base_url, None, STALL_S)
        try:
            return await client.stream({"model": "scripted", "prompt": "hi", "max_tokens": 8, "stream": True}, Trace())
        finally:
            await client.aclose()

    with scripted({"/v1/completions": stream}) as server:
        trace = asyncio.run(request())
    assert trace.finished and trace.tokens == 3


def test_keepalives_from_the_first_request_stop_the_run_with_the_reason(tmp_path: Path) -> None:
    """Through `runner measure`: a server that answers every stream with comments only stops the run in one line."""
    faults = {"stall_after_tokens": 1, "stall_s": 30.0, "stall_keepalive_s": 0.05}
    started = time.monotonic()
    stopped = asyncio.run(measure_with_faults(FAULT_SIM, tmp_path / "run.json", faults, after_cells=0, stall_timeout=0.5))
    assert stopped is not None and "no tokens from the server for 0.5 s, only keepalives" in stopped
    assert time.monotonic() - started < 30


def test_a_decode_cell_whose_streams_send_only_keepalives_fails_with_the_reason(tmp_path: Path) -> None:
    """Through `runner measure`: mid-window, the simulator stalls but keeps the connections busy with comments."""
    out = tmp_path / "run.json"
    faults = {"stall_after_tokens": 5, "stall_s": 4.0, "stall_keepalive_s": 0.05}
    assert asyncio.run(measure_with_faults(FAULT_SIM, out, faults, after_cells=1, stall_timeout=0.5, duration=3.0)) is None
    failed = [c for c in read_bundle(out).decode if c.status == "Failed"]
    assert failed, "streams of keepalives were measured as if they were making progress"
    assert all("for 0.5 s" in c.error for c in failed), [c.error for c in failed]
