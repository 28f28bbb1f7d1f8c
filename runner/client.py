"""The HTTP side of the runner: an httpx async client, SSE events (httpx-sse) and token counting.

Tokens are counted from the server's running count where it sends one: vLLM's (and
SGLang's) continuous_usage_stats put completion_tokens in every chunk, llama.cpp's
timings_per_token puts predicted_n there, so speculative decoding's several tokens per chunk
count right. A server with neither has each text chunk counted as one token and the
difference settled by its final usage report; `Trace.counted_by` says which way was used.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec
from httpx_sse import EventSource, SSEError

from runner.errors import LoopDetected, RequestFailed
from runner.loops import LoopDetector


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _Choice(msgspec.Struct):
    text: str | None = None
    finish_reason: str | None = None


class _Timings(msgspec.Struct):
    predicted_n: int | None = None


class _Chunk(msgspec.Struct):
    model: str | None = None
    choices: list[_Choice] = []
    usage: _Usage | None = None
    timings: _Timings | None = None
    error: Any = None


_chunk_decoder = msgspec.json.Decoder(_Chunk)
_encoder = msgspec.json.Encoder()
# The longest SSE line the client holds while waiting for its newline.
MAX_LINE_BYTES = 1 << 20


class Trace:
    """One streamed request: when it started, when each batch of tokens arrived, how it ended."""

    __slots__ = ("start", "times", "counts", "tokens", "prompt_tokens", "finished", "end", "loops", "last_seen",
                 "counted_by")

    def __init__(self, detect_loops: bool = False) -> None:
        """A request about to be sent; with `detect_loops` its text is checked for loops."""
        # last_seen: when the stream last made progress (a token), which keepalives do not count as.
        self.start = self.last_seen = time.perf_counter()
        self.times: list[float] = []
        self.counts: list[int] = []
        self.tokens = 0
        self.prompt_tokens: int | None = None
        self.finished = False
        self.end: float | None = None
        self.loops = LoopDetector() if detect_loops else None
        # "usage" or "timings" once a chunk before the last carried a running count, else "chunks".
        self.counted_by = "chunks"

    @property
    def first_token_at(self) -> float | None:
        """When the first token arrived, or None if none has."""
        return self.times[0] if self.times else None


def _running_count(chunk: _Chunk) -> tuple[int | None, str]:
    """The tokens generated so far as the chunk states them, and where that came from."""
    if chunk.usage is not None and chunk.usage.completion_tokens is not None:
        return chunk.usage.completion_tokens, "usage"
    if chunk.timings is not None and chunk.timings.predicted_n is not None:
        return chunk.timings.predicted_n, "timings"
    return None, "chunks"


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without its trailing /v1 path."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _excerpt(data: bytes, limit: int = 200) -> str:
    """A short single-line excerpt of a server answer for an error message."""
    text = data.decode("utf-8", "replace").replace("\n", " ").strip()
    return text[:limit] + ("…" if len(text) > limit else "")


class _Wire(httpx.AsyncByteStream):
    """The stream's bytes as httpx-sse reads them, checked at each network read as they arrive.

    `arrived` is when the latest read came, so the events in it share that time; a line may not
    grow past MAX_LINE_BYTES; and once a read's events are handled, more than `limit` seconds
    since the last token fails the stream, however many keepalives came meanwhile.
    """

    def __init__(self, response: httpx.Response, trace: Trace, limit: float | None) -> None:
        """Read `response` for `trace`; `limit` None leaves silence to a watchdog."""
        self._source, self._trace, self._limit = response, trace, limit
        self.arrived = time.perf_counter()
        # The body decoded already (gzip and such), so only the content type carries over.
        self.response = httpx.Response(200, headers={"content-type": response.headers.get("content-type", "")},
                                       stream=self)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """Each read of the body, after its checks."""
        open_line = 0  # bytes since the last line break
        async for data in self._source.aiter_bytes():
            self.arrived = time.perf_counter()
            end = max(data.rfind(b"\n"), data.rfind(b"\r"))
            open_line = len(data) - end - 1 if end >= 0 else open_line + len(data)
            if open_line > MAX_LINE_BYTES:
                raise RequestFailed(f"the server sent a line of more than {MAX_LINE_BYTES:,} bytes without a newline")
            yield data
            # httpx-sse asks for the next read only when it has handed out every event of this one.
            if self._limit is not None and self.arrived - self._trace.last_seen > self._limit:
                raise RequestFailed(f"no tokens from the server for {self._limit:g} s, only keepalives or empty data")


class Client:
    """Talks to one OpenAI-compatible server; every error surfaces as RequestFailed."""

    def __init__(self, base_url: str, api_key: str | None, stall_timeout: float = 60.0) -> None:
        """Open a connection pool for `base_url`; `stall_timeout` bounds silence mid-stream."""
        self.base_url = base_url.rstrip("/")
        self.root = server_root(self.base_url)
        self.stall_timeout = stall_timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(connect=10.0, read=stall_timeout, write=60.0, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=512),
        )

    async def aclose(self) -> None:
        """Close every connection."""
        await self.http.aclose()

    def _url(self, path: str, root: bool) -> str:
        return (self.root if root else self.base_url) + path

    async def get(self, path: str, root: bool = False, timeout: float = 10.0) -> httpx.Response:
        """GET a path under the base URL (or the server root); raises RequestFailed."""
        try:
            return await self.http.get(self._url(path, root), timeout=timeout)
        except httpx.HTTPError as exc:
            raise RequestFailed(self._describe(exc, path)) from None

    async def get_json(self, path: str, root: bool = False) -> Any | None:
        """GET JSON, or None when the path is missing, fails or is not JSON."""
        try:
            response = await self.get(path, root)
            return response.json() if response.status_code == 200 else None
        except (RequestFailed, ValueError):
            return None

    async def post_json(self, path: str, body: dict, root: bool = False) -> Any:
        """POST JSON and return the decoded answer; raises RequestFailed on any failure."""
        try:
            response = await self.http.post(self._url(path, root), content=_encoder.encode(body),
                                            headers={"Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise RequestFailed(self._describe(exc, path)) from None
        if response.status_code != 200:
            raise RequestFailed(f"HTTP {response.status_code} from {path}: {_excerpt(response.content)}")
        try:
            return response.json()
        except ValueError:
            raise RequestFailed(f"{path} answered with something that is not JSON: {_excerpt(response.content)}") from None

    async def stream(self, body: dict, trace: Trace, expect_model: str | None = None,
                     silence: float | None = -1.0) -> Trace:
        """Stream one /completions request into `trace` until it finishes or fails.

        `silence` bounds any wait for data in seconds (default: the stall timeout; None: no
        bound, for streams a watchdog guards, which may wait in a queue for their first token).
        """
        payload = _encoder.encode(body)
        limit = self.stall_timeout if silence == -1.0 else silence
        timeout = httpx.Timeout(connect=10.0, read=limit, write=60.0, pool=None)
        trace.start = trace.last_seen = time.perf_counter()

        async def on_wire(event: str, info: dict[str, Any]) -> None:
            """Restart the clock as the request's headers go out: the time this client spent
            building and queueing it behind the other streams it opened is not the server's."""
            if event == "http11.send_request_headers.started":
                trace.start = time.perf_counter()

        try:
            async with self.http.stream("POST", self.base_url + "/completions", content=payload, timeout=timeout,
                                        headers={"Content-Type": "application/json"},
                                        extensions={"trace": on_wire}) as response:
                if response.status_code != 200:
                    raise RequestFailed(f"HTTP {response.status_code} from /completions: {_excerpt(await response.aread())}")
                await self._read_events(response, trace, expect_model, limit, body.get("max_tokens"))
        except httpx.HTTPError as exc:
            raise RequestFailed(self._describe(exc, "/completions", limit)) from None
        if not trace.finished:
            raise RequestFailed("the server closed the stream before the request finished")
        return trace

    async def _read_events(self, response: httpx.Response, trace: Trace, expect_model: str | None,
                           limit: float | None, max_tokens: int | None) -> None:
        """Parse the stream's events (httpx-sse) as they arrive; every chunk of one read shares its arrival time.

        Bytes that bring no token (keepalive comments, empty chunks, a line without its newline)
        do not hold the stall timeout off, and a stream going on far past max_tokens fails.
        """
        wire = _Wire(response, trace, limit)
        events = EventSource(wire.response).aiter_sse()
        try:
            async for event in events:
                payload = event.data.strip()
                if not payload:
                    continue
                if payload == "[DONE]":
                    trace.finished = True
                    trace.end = trace.end or wire.arrived
                    return
                try:
                    chunk = _chunk_decoder.decode(payload)
                except msgspec.DecodeError:
                    raise RequestFailed(f"malformed SSE data from the server: {_excerpt(payload.encode(), 80)}") from None
                self._take(chunk, trace, wire.arrived, expect_model)
                if max_tokens and trace.tokens > 2 * max_tokens + 16:
                    raise RequestFailed(f"the stream went on past {trace.tokens} tokens without finishing (max_tokens {max_tokens})")
        except SSEError:
            kind = response.headers.get("content-type", "")
            raise RequestFailed(f"the server answered with Content-Type {kind!r}, not an event stream") from None
        finally:
            await events.aclose()

    @staticmethod
    def _take(chunk: _Chunk, trace: Trace, now: float, expect_model: str | None) -> None:
        """Account one decoded chunk: tokens, finish, model check, loop check."""
        if chunk.error is not None:
            message = chunk.error.get("message", chunk.error) if isinstance(chunk.error, dict) else chunk.error
            raise RequestFailed(f"the server reported an error mid-stream: {str(message)[:200]}")
        if expect_model and chunk.model and chunk.model != expect_model:
            raise RequestFailed(f"the server answered as model {chunk.model!r}, not {expect_model!r}")
        choice = chunk.choices[0] if chunk.choices else None
        usage = chunk.usage
        running, source = _running_count(chunk)
        if running is not None:
            new = running - trace.tokens
            if choice is not None and choice.text:  # a count beside the text, not only in a closing report
                trace.counted_by = source
        else:
            new = 1 if choice is not None and choice.text else 0
        if usage is not None and usage.prompt_tokens is not None:
            trace.prompt_tokens = usage.prompt_tokens
        if new > 0:
            trace.last_seen = now
            trace.times.append(now)
            trace.counts.append(new)
            trace.tokens += new
        if choice is not None:
            if choice.finish_reason:
                trace.finished = True
                trace.end = now
            if trace.loops is not None and choice.text and trace.loops.feed(choice.text):
                raise LoopDetected()

    def _describe(self, exc: httpx.HTTPError, path: str, silence: float | None = None) -> str:
        """One line saying what went wrong with the connection, without headers or secrets."""
        if isinstance(exc, httpx.ReadTimeout):
            return f"no data from the server for {silence or self.stall_timeout:g} s ({path})"
        if isinstance(exc, httpx.TimeoutException):
            return f"timed out talking to the server ({path}): {type(exc).__name__}"
        if isinstance(exc, httpx.ConnectError):
            return f"cannot connect to {self.root} ({path}): {exc}"
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            return f"connection lost mid-request ({path}): {exc or type(exc).__name__}"
        return f"{type(exc).__name__} talking to the server ({path}): {exc}"
