"""The client of one OpenAI-compatible server: whole answers bounded in time and size, token streams
read into traces, and the key sent only to the server's own origin."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec
from httpx_sse import EventSource, SSEError

from runner.client.failures import byte_size, connection_failure, detail, excerpt, quoted
from runner.client.tls import trusted_context
from runner.client.trace import Trace, chunk_decoder, take_chunk
from runner.client.wire import Wire, most_tokens
from runner.errors import MeasureError, RequestFailed

# The bounds on a whole answer that is not a stream (/metrics, /v1/models, /version, …), body
# included: its deadline and its size; a /tokenize or /detokenize answer may also be this many
# times the request it answers, since a long prompt's token ids are long.
ANSWER_DEADLINE_S = 10.0
MAX_ANSWER_BYTES = 8_000_000
ANSWER_BYTES_PER_SENT_BYTE = 16
# What is read of an error answer's body, for the excerpt its error message quotes.
MAX_ERROR_BYTES = 4_000

_encoder = msgspec.json.Encoder()


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of a URL: what decides where a credential may go."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(parts.scheme.lower())


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without its trailing /v1 path."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


async def _read_body(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """The body up to `cap` bytes, and whether the server had more; what lies past the cap is never read."""
    parts: list[bytes] = []
    size = 0
    async for data in response.aiter_bytes():
        parts.append(data)
        size += len(data)
        if size > cap:
            return b"".join(parts)[:cap], True
    return b"".join(parts), False


async def _error_excerpt(response: httpx.Response) -> str:
    """An excerpt of an error answer's body, of which at most MAX_ERROR_BYTES are read within ANSWER_DEADLINE_S."""
    try:
        async with asyncio.timeout(ANSWER_DEADLINE_S):
            body, _ = await _read_body(response, MAX_ERROR_BYTES)
    except TimeoutError:
        return f"(its body did not finish within {ANSWER_DEADLINE_S:g} s)"
    return excerpt(body)


class Client:
    """Talks to one OpenAI-compatible server; every error surfaces as RequestFailed."""

    def __init__(self, base_url: str, api_key: str | None, stall_timeout: float = 60.0) -> None:
        """Open a connection pool for `base_url`; `stall_timeout` bounds silence mid-stream."""
        self.base_url = base_url.rstrip("/")
        self.root = server_root(self.base_url)
        self.stall_timeout = stall_timeout
        # When this client last stopped reading a stream the server had not finished (time.monotonic()),
        # so the server may still be generating it; None while every stream ran to its end.
        self.last_cut_off: float | None = None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._keyless: httpx.AsyncClient | None = None
        try:
            self.http = httpx.AsyncClient(
                headers=headers, verify=trusted_context(),
                timeout=httpx.Timeout(connect=10.0, read=stall_timeout, write=60.0, pool=None),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=512),
            )
        except OSError as exc:  # the certificates SSL_CERT_FILE or SSL_CERT_DIR names are loaded at once
            raise MeasureError(f"cannot load the trusted certificates that SSL_CERT_FILE or SSL_CERT_DIR names: "
                               f"{detail(exc)}") from None

    async def aclose(self) -> None:
        """Close every connection."""
        await self.http.aclose()
        if self._keyless is not None:
            await self._keyless.aclose()

    def _url(self, path: str, root: bool) -> str:
        return path if "://" in path else (self.root if root else self.base_url) + path

    def _http_for(self, url: str) -> httpx.AsyncClient:
        """The connection pool for `url`: the server's own (which sends the key) only on the server's
        origin, so the key never reaches another host, such as a metrics endpoint elsewhere."""
        if _origin(url) == _origin(self.root):
            return self.http
        if self._keyless is None:
            self._keyless = httpx.AsyncClient(timeout=httpx.Timeout(ANSWER_DEADLINE_S), follow_redirects=False,
                                              verify=trusted_context())
        return self._keyless

    async def get_url(self, url: str, timeout: float | None = None) -> httpx.Response:
        """GET an absolute URL (a metrics endpoint of a replica), bounded as `get` is; the key goes
        only to the server's own origin."""
        return await self._fetch("GET", url, False, timeout or ANSWER_DEADLINE_S, MAX_ANSWER_BYTES)

    async def get(self, path: str, root: bool = False, timeout: float | None = None) -> httpx.Response:
        """GET a path under the base URL (or the server root), whole within `timeout` seconds
        (default ANSWER_DEADLINE_S) and MAX_ANSWER_BYTES; raises RequestFailed."""
        return await self._fetch("GET", path, root, timeout or ANSWER_DEADLINE_S, MAX_ANSWER_BYTES)

    async def get_json(self, path: str, root: bool = False) -> Any | None:
        """GET JSON, or None when the path is missing, fails or is not JSON."""
        try:
            response = await self.get(path, root)
            return response.json() if response.status_code == 200 else None
        except (RequestFailed, ValueError):
            return None

    async def post_json(self, path: str, body: dict, root: bool = False) -> Any:
        """POST JSON and return the decoded answer; raises RequestFailed on any failure.

        The answer may take the stall timeout, and be as long as a token list of the request's text.
        """
        payload = _encoder.encode(body)
        response = await self._fetch("POST", path, root, max(ANSWER_DEADLINE_S, self.stall_timeout),
                                     max(MAX_ANSWER_BYTES, ANSWER_BYTES_PER_SENT_BYTE * len(payload)), payload)
        if response.status_code != 200:
            raise RequestFailed(f"HTTP {response.status_code} from {path}: {excerpt(response.content)}")
        try:
            return response.json()
        except ValueError:
            raise RequestFailed(f"{path} answered with something that is not JSON: {excerpt(response.content)}") from None

    async def _fetch(self, method: str, path: str, root: bool, deadline: float, cap: int,
                     payload: bytes | None = None) -> httpx.Response:
        """One whole request that is not a stream, within `deadline` seconds, body included.

        A body past `cap` bytes fails it; an error answer's is cut to MAX_ERROR_BYTES, for its excerpt.
        """
        headers = {"Content-Type": "application/json"} if payload is not None else None
        answered = False
        try:
            async with asyncio.timeout(deadline):
                url = self._url(path, root)
                async with self._http_for(url).stream(method, url, content=payload, headers=headers,
                                                      timeout=deadline) as response:
                    answered = True
                    ok = response.status_code == 200
                    body, more = await _read_body(response, cap if ok else MAX_ERROR_BYTES)
        except TimeoutError:
            raise RequestFailed(f"{path} did not finish within {deadline:g} s") from None
        except httpx.HTTPError as exc:
            raise self._failure(exc, path, answered) from None
        if ok and more:
            raise RequestFailed(f"{path} answered more than {byte_size(cap)}")
        return httpx.Response(response.status_code, headers={"content-type": response.headers.get("content-type", "")},
                              content=body)

    async def stream(self, body: dict, trace: Trace, expect_model: str | None = None,
                     silence: float | None = -1.0) -> Trace:
        """Stream one request into `trace` until it finishes or fails: /chat/completions for a body
        with messages, else /completions.

        `silence` bounds any wait for data in seconds (default: the stall timeout; None: no
        bound, for streams a watchdog guards, which may wait in a queue for their first token).
        """
        payload = _encoder.encode(body)
        limit = self.stall_timeout if silence == -1.0 else silence
        timeout = httpx.Timeout(connect=10.0, read=limit, write=60.0, pool=None)
        trace.start = trace.last_seen = time.perf_counter()
        answered = False

        async def on_wire(event: str, info: dict[str, Any]) -> None:
            """Restart the clock as the request's headers go out: the time this client spent
            building and queueing it behind the other streams it opened is not the server's."""
            if event == "http11.send_request_headers.started":
                trace.start = time.perf_counter()

        path = "/chat/completions" if "messages" in body else "/completions"
        refused = False  # the server answered with an error status: it runs nothing for this request
        try:
            async with self.http.stream("POST", self.base_url + path, content=payload, timeout=timeout,
                                        headers={"Content-Type": "application/json"},
                                        extensions={"trace": on_wire}) as response:
                answered = True
                if response.status_code != 200:
                    refused = True
                    raise RequestFailed(f"HTTP {response.status_code} from {path}: {await _error_excerpt(response)}")
                await self._read_events(response, trace, expect_model, limit, body.get("max_tokens"))
        except httpx.HTTPError as exc:
            raise self._failure(exc, path, answered, limit) from None
        finally:  # a failure, a cancellation or the end of a window: the server may still generate it
            if not (trace.finished or refused):
                self.last_cut_off = time.monotonic()
        if not trace.finished:
            raise RequestFailed("the server closed the stream before the request finished")
        return trace

    async def _read_events(self, response: httpx.Response, trace: Trace, expect_model: str | None,
                           limit: float | None, max_tokens: int | None) -> None:
        """Parse the stream's events (httpx-sse) as they arrive; every chunk of one read shares its arrival time.

        Bytes that bring no token (keepalive comments, empty chunks, a line without its newline)
        do not hold the stall timeout off, and a stream going on far past max_tokens fails.
        """
        most = most_tokens(max_tokens)
        wire = Wire(response, trace, limit, most)
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
                    chunk = chunk_decoder.decode(payload)
                except msgspec.DecodeError:
                    raise RequestFailed(f"malformed SSE data from the server: {excerpt(payload.encode(), 80)}") from None
                take_chunk(chunk, trace, wire.arrived, expect_model)
                if most and trace.tokens > most:
                    raise RequestFailed(f"the stream went on past {trace.tokens} tokens without finishing (max_tokens {max_tokens})")
        except SSEError:
            kind = response.headers.get("content-type", "")
            raise RequestFailed(f"the server answered with Content-Type {quoted(kind)}, not an event stream") from None
        finally:
            await events.aclose()

    def _failure(self, exc: httpx.HTTPError, path: str, answered: bool, silence: float | None = None) -> RequestFailed:
        """What went wrong with the connection, in one line (see connection_failure); `silence` None: the stall timeout."""
        return connection_failure(exc, self.root, path, answered, silence or self.stall_timeout)
