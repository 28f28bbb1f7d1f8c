"""Endpoint handlers: route each HTTP request to a JSON answer or an SSE stream.

Faults that act on the wire (errors, resets, stalls, malformed events, readiness,
wrong model names) are applied here; the engine knows nothing of them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import msgspec

from runner.simulator.config import SimConfig
from runner.simulator.engine import BatchEngine, SimRequest
from runner.simulator.exposition import render_metrics
from runner.simulator.faults import Faults, FaultState, StreamFaults, merge_faults
from runner.simulator.openai import (
    DONE_EVENT,
    ApiError,
    Generation,
    Responder,
    decode_body,
    detokenize,
    models_body,
    parse_chat,
    parse_completion,
    tokenize,
)
from runner.simulator.protocol import (
    ChunkedStream,
    HttpRequest,
    reset_connection,
    response_bytes,
)
from runner.simulator.tokenizer import Tokenizer

JSON = "application/json"
ERROR_KINDS = {429: "RateLimitError", 500: "InternalServerError", 503: "ServiceUnavailableError"}
Parser = Callable[[bytes, SimConfig, Tokenizer], Generation]


class Routes:
    """Answers requests for one simulated server."""

    def __init__(self, config: SimConfig, tokenizer: Tokenizer, engine: BatchEngine,
                 faults: FaultState, set_faults: Callable[[Faults], None]) -> None:
        """Serve `engine`; `set_faults` arms new faults (the server owns their timers)."""
        self.config = config
        self.tokenizer = tokenizer
        self.engine = engine
        self.faults = faults
        self._set_faults = set_faults
        self._simple: dict[tuple[str, str], Callable[[HttpRequest], tuple[bytes, str]]] = {
            ("GET", "/health"): lambda _: (b"", "text/plain"),
            ("GET", "/version"): lambda _: (msgspec.json.encode({"version": config.version}), JSON),
            ("GET", "/v1/models"): lambda _: (models_body(config), JSON),
            ("GET", "/metrics"): lambda _: (
                render_metrics(config, engine.stats()).encode(), "text/plain; version=0.0.4"),
            ("GET", "/_sim/faults"): lambda _: (msgspec.json.encode(self.faults.faults), JSON),
            ("POST", "/_sim/faults"): self._post_faults,
            ("DELETE", "/_sim/faults"): self._delete_faults,
            ("GET", "/_sim/stats"): lambda _: (msgspec.json.encode(engine.stats()), JSON),
        }
        if not config.text_only:
            self._simple[("POST", "/tokenize")] = lambda r: (tokenize(r.body, config, tokenizer), JSON)
            self._simple[("POST", "/detokenize")] = lambda r: (detokenize(r.body, config, tokenizer), JSON)
        self._generators: dict[tuple[str, str], Parser] = {
            ("POST", "/v1/completions"): parse_completion,
            ("POST", "/v1/chat/completions"): parse_chat,
        }
        self._paths = {path for _, path in [*self._simple, *self._generators]}

    async def handle(self, req: HttpRequest, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> bool:
        """Answer `req`; returns whether the connection may serve another request."""
        key = (req.method, req.path)
        try:
            if self.faults.faults.never_ready and not req.path.startswith("/_sim/"):
                raise ApiError(503, "The server is not ready.", ERROR_KINDS[503])
            if key in self._generators:
                return await self._generate(req, self._generators[key], reader, writer)
            if key in self._simple:
                body, content_type = self._simple[key](req)
                return await _respond(writer, req, 200, body, content_type)
            status = 405 if req.path in self._paths else 404
            detail = "Method Not Allowed" if status == 405 else "Not Found"
            return await _respond(writer, req, status, msgspec.json.encode({"detail": detail}), JSON)
        except ApiError as exc:
            headers = {"retry-after": "1"} if exc.status in (429, 503) else None
            return await _respond(writer, req, exc.status, exc.body(), JSON, headers)

    def _post_faults(self, req: HttpRequest) -> tuple[bytes, str]:
        """Merge the JSON body's fields into the faults in force."""
        changes = decode_body(req.body, dict[str, object])
        try:
            faults = merge_faults(self.faults.faults, changes)
        except msgspec.ValidationError as exc:
            raise ApiError(400, f"Invalid faults: {exc}") from None
        self._set_faults(faults)
        return msgspec.json.encode(faults), JSON

    def _delete_faults(self, _: HttpRequest) -> tuple[bytes, str]:
        """Clear every fault."""
        self._set_faults(Faults())
        return b"{}", JSON

    async def _generate(self, req: HttpRequest, parse: Parser, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> bool:
        """Run one completion or chat request through the engine and answer it."""
        gen = parse(req.body, self.config, self.tokenizer)
        status = self.faults.take_error()
        if status is not None:
            raise ApiError(status, f"Simulated HTTP {status}.", ERROR_KINDS.get(status, "APIError"))
        responder = Responder(gen, self.faults.faults.wrong_model or self.config.model)
        sim_req = self.engine.submit(gen.prompt, gen.max_tokens, gen.ignore_eos, req.received or None)
        watcher = asyncio.create_task(self._abort_on_eof(reader, sim_req))
        try:
            if gen.stream:
                answered = await self._stream(responder, sim_req, writer)
            else:
                answered = await self._collect(req, responder, sim_req, writer)
            return answered and not watcher.done()
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            self.engine.abort(sim_req)

    async def _abort_on_eof(self, reader: asyncio.StreamReader, sim_req: SimRequest) -> None:
        """Abort `sim_req` when the client hangs up (HTTP/1.1 clients send nothing meanwhile)."""
        if not await reader.read(1):
            self.engine.abort(sim_req)

    def _text(self, tokens: list[int]) -> str:
        """Text of output tokens (all single ASCII pieces)."""
        return "".join(map(self.tokenizer.piece_text, tokens))

    async def _collect(self, req: HttpRequest, responder: Responder, sim_req: SimRequest,
                       writer: asyncio.StreamWriter) -> bool:
        """Wait for the whole output, then send one JSON body."""
        parts: list[str] = []
        produced = 0
        while True:
            emission = await sim_req.events.get()
            if emission.finish_reason == "abort":
                return False
            parts.append(self._text(emission.tokens))
            produced += len(emission.tokens)
            if emission.finish_reason is not None:
                break
        usage = responder.usage(produced, sim_req.cached_tokens)
        body = responder.full_body("".join(parts), emission.finish_reason, usage)
        return await _respond(writer, req, 200, body, JSON)

    async def _stream(self, responder: Responder, sim_req: SimRequest,
                      writer: asyncio.StreamWriter) -> bool:
        """Stream SSE events as the engine emits tokens, suffering the stream faults."""
        gen = responder.gen
        stream = ChunkedStream(writer)
        faults = StreamFaults(self.faults.faults)

        async def send(event: bytes) -> None:
            """Send one SSE event, preceded by a malformed one when that fault is due."""
            malformed = faults.malformed_line()
            if malformed is not None:
                await stream.send(malformed)
            await stream.send(event)

        await stream.start("text/event-stream")
        sent = 0
        while True:
            emission = await sim_req.events.get()
            if emission.finish_reason == "abort":
                return False
            if gen.kind == "chat" and sent == 0:
                await send(responder.role_event(responder.usage(0) if gen.continuous_usage else None))
            sent += len(emission.tokens)
            usage = responder.usage(sent) if gen.continuous_usage else None
            await send(responder.token_event(self._text(emission.tokens), emission.finish_reason, usage))
            if faults.reset_due(sent):
                reset_connection(writer)
                return False
            stall = faults.stall_seconds(sent)
            if stall:
                await _stall(stream, stall, self.faults.faults.stall_keepalive_s)
            if emission.finish_reason is not None:
                break
        if gen.include_usage:
            await send(responder.usage_event(responder.usage(sent, sim_req.cached_tokens)))
        await send(DONE_EVENT)
        await stream.end()
        return True


KEEPALIVE = b": keepalive\n\n"


async def _stall(stream: ChunkedStream, seconds: float, keepalive_every: float | None) -> None:
    """Send no token for `seconds`: silence, or keepalive comments every `keepalive_every` seconds."""
    if keepalive_every is None:
        await asyncio.sleep(seconds)
        return
    ends = time.monotonic() + seconds
    while (left := ends - time.monotonic()) > 0:
        await stream.send(KEEPALIVE)
        await asyncio.sleep(min(keepalive_every, left))


async def _respond(writer: asyncio.StreamWriter, req: HttpRequest, status: int, body: bytes,
                   content_type: str, headers: dict[str, str] | None = None) -> bool:
    """Send a whole response; returns whether the connection stays open."""
    writer.write(response_bytes(status, body, content_type, req.keep_alive, headers))
    await writer.drain()
    return req.keep_alive
