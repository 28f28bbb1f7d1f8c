"""The client: the server root its other endpoints hang off, any well-formed event stream read
(httpx-sse) and one that is not named, and which streams it cut off while the server may still
be generating them."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from runner.client.http_client import Client, server_root
from runner.client.trace import Trace
from runner.errors import RequestFailed
from tests.engines.scripted_server import JSON, Answer, chunk, every, scripted

BODY = {"model": "scripted", "prompt": "hi", "max_tokens": 8, "stream": True}


def test_server_root() -> None:
    assert server_root("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000"
    assert server_root("https://h.example/api/v1/") == "https://h.example/api"


def event(text: str, finish: str | None = None, end: str = "\n") -> bytes:
    """One completions chunk as an SSE event with the given line ending."""
    data = json.dumps({"model": "scripted", "choices": [{"text": text, "finish_reason": finish}]})
    return f"data: {data}{end}{end}".encode()


def _stream(answer: Answer) -> Trace:
    async def request() -> Trace:
        client = Client(server.base_url, None, 5.0)
        try:
            return await client.stream(BODY, Trace())
        finally:
            await client.aclose()

    with scripted({"/v1/completions": answer}) as server:
        return asyncio.run(request())


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_events_are_read_whatever_the_line_ending(end: str) -> None:
    def stream() -> Iterator[bytes]:
        yield f": keepalive{end}{end}event: message{end}id: 1{end}".encode()
        for text in "abc":
            piece = event(text, end=end)
            yield piece[:7]  # an event cut across two reads is read once whole
            time.sleep(0.02)
            yield piece[7:]
        yield event("", "length", end) + f"data: [DONE]{end}{end}".encode()

    trace = _stream(stream)
    assert trace.finished and trace.tokens == 3 and len(trace.times) == 3
    assert trace.times == sorted(trace.times) and trace.times[-1] - trace.times[0] >= 0.03


def test_an_answer_that_is_not_an_event_stream_fails_with_its_content_type() -> None:
    with pytest.raises(RequestFailed, match="answered with Content-Type 'application/json', not an event stream"):
        _stream((200, JSON, b'{"choices": [{"text": "x", "finish_reason": "length"}]}'))


def _finished() -> Iterator[bytes]:
    yield chunk("x") + chunk("", "length") + b"data: [DONE]\n\n"


def _cut_off_after(answer: Answer, stall_s: float = 5.0, cancel_after_s: float | None = None) -> float | None:
    """Stream one request from a server that sends `answer` (cancelled after `cancel_after_s`, if given);
    the client's last_cut_off afterwards, as an offset from when the request began."""
    async def request() -> float | None:
        client = Client(server.base_url, None, stall_s)
        began = asyncio.get_running_loop().time()
        try:
            streaming = asyncio.create_task(client.stream(BODY, Trace()))
            try:
                await asyncio.wait_for(asyncio.shield(streaming), cancel_after_s)
            except TimeoutError:
                streaming.cancel()
            except RequestFailed:
                pass
            await asyncio.gather(streaming, return_exceptions=True)
        finally:
            await client.aclose()
        return None if client.last_cut_off is None else client.last_cut_off - began

    with scripted({"/v1/completions": answer}) as server:
        return asyncio.run(request())


@pytest.mark.parametrize("answer", [_finished, (500, JSON, b'{"error": "busy"}')], ids=["finished", "refused"])
def test_a_stream_the_server_ended_itself_is_not_cut_off(answer: Answer) -> None:
    assert _cut_off_after(answer) is None


def test_a_stream_that_stalls_or_is_cancelled_is_cut_off_when_the_client_stops_reading() -> None:
    stalled = _cut_off_after(every(0.05, b": keepalive\n\n"), stall_s=0.3)
    assert stalled is not None and stalled >= 0.3
    cancelled = _cut_off_after(every(0.05, chunk("x")), cancel_after_s=0.2)
    assert cancelled is not None and cancelled >= 0.2
