"""A token stream's bytes as httpx-sse reads them, each network read checked as it arrives: the
bounds on its lines, its events and its size, and the stall timeout that keepalives do not hold off."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx

from runner.client.failures import byte_size
from runner.client.trace import Trace
from runner.errors import RequestFailed

# The longest SSE line the client holds while waiting for its newline, and the longest event
# (its lines up to the blank line that ends it), which httpx-sse holds whole.
MAX_LINE_BYTES = 1 << 20
MAX_EVENT_BYTES = 4 << 20
# A stream's bytes per token it may send (see most_tokens): far above any engine's chunks.
STREAM_BYTES_PER_TOKEN = 64 << 10

_LINE_ENDS = (b"\n", b"\r")
# Two line ends in a row that are not one CRLF: a blank line, whatever the stream's line endings.
_BLANK_LINES = (b"\n\n", b"\r\r", b"\n\r")


def most_tokens(max_tokens: int | None) -> int | None:
    """The most tokens a stream asked for `max_tokens` may send before it is taken for runaway."""
    return 2 * max_tokens + 16 if max_tokens else None


def _open_after(data: bytes, marks: tuple[bytes, ...], before: int) -> int:
    """Bytes after the last of `marks` in `data`; `before` plus all of it where none is there."""
    ends = [at + len(mark) for mark in marks if (at := data.rfind(mark)) >= 0]
    return len(data) - max(ends) if ends else before + len(data)


class Wire(httpx.AsyncByteStream):
    """The stream's bytes as httpx-sse reads them, checked at each network read as they arrive.

    `arrived` is when the latest read came, so the events in it share that time; a line may not
    grow past MAX_LINE_BYTES, an event past MAX_EVENT_BYTES, nor the stream past
    STREAM_BYTES_PER_TOKEN for each token it may send; and once a read's events are handled,
    more than `limit` seconds since the last token fails the stream, however many keepalives
    came meanwhile.
    """

    def __init__(self, response: httpx.Response, trace: Trace, limit: float | None, most_tokens: int | None) -> None:
        """Read `response` for `trace`; `limit` None leaves silence to a watchdog, and `most_tokens`
        None (no max_tokens) leaves the stream's bytes unbounded."""
        self._source, self._trace, self._limit = response, trace, limit
        self._most_tokens = most_tokens
        self.arrived = time.perf_counter()
        # The body decoded already (gzip and such), so only the content type carries over.
        self.response = httpx.Response(200, headers={"content-type": response.headers.get("content-type", "")},
                                       stream=self)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """Each read of the body, after its checks."""
        line = event = total = 0  # bytes since the last line end, since the last blank line, in all
        last = b""  # the previous read's last byte: a blank line may straddle two reads
        async for data in self._source.aiter_bytes():
            self.arrived = time.perf_counter()
            total += len(data)
            line = _open_after(data, _LINE_ENDS, line)
            event = _open_after(data, _BLANK_LINES, 0 if last + data[:1] in _BLANK_LINES else event)
            last = data[-1:] or last
            self._check(line, event, total)
            yield data
            # httpx-sse asks for the next read only when it has handed out every event of this one.
            if self._limit is not None and self.arrived - self._trace.last_seen > self._limit:
                raise RequestFailed(f"no tokens from the server for {self._limit:g} s, only keepalives or empty data")

    def _check(self, line: int, event: int, total: int) -> None:
        """Fail the stream whose open line, open event or total bytes went past its bound."""
        if line > MAX_LINE_BYTES:
            raise RequestFailed(f"the server sent a line of more than {MAX_LINE_BYTES:,} bytes without a newline")
        if event > MAX_EVENT_BYTES:
            raise RequestFailed(f"the server sent an event of more than {MAX_EVENT_BYTES:,} bytes without a blank line")
        if self._most_tokens is not None and total > self._most_tokens * STREAM_BYTES_PER_TOKEN:
            raise RequestFailed(f"the server sent more than {byte_size(self._most_tokens * STREAM_BYTES_PER_TOKEN)} "
                                f"in a stream of at most {self._most_tokens:,} tokens")
