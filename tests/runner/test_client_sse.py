"""The client reads any well-formed event stream (httpx-sse), and names a stream that is not one."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from runner.client import Client, Trace
from runner.errors import RequestFailed
from tests.engines.scripted_server import JSON, Answer, scripted

BODY = {"model": "scripted", "prompt": "hi", "max_tokens": 8, "stream": True}


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
