"""A hostile or misconfigured server cannot hang the runner, fill its memory, or garble its error lines.

Every case runs against a real server on 127.0.0.1: answers that drip forever or never end,
events that never close, counts that are no counts, text full of terminal escapes, a
self-signed certificate, and the wrong scheme for the port. Small bounds are patched in where
the real ones would make a test slow; the code path is the one the runner takes.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from runner.bundle.terminal_text import printable
from runner.client import Client, Trace, UntrustedCertificate, http_client, wire
from runner.client.http_client import MAX_ANSWER_BYTES
from runner.client.wire import MAX_EVENT_BYTES
from runner.endpoints import MetricsEndpoints
from runner.errors import MeasureError, RequestFailed
from tests.engines.scripted_server import JSON, MODELS, ScriptedServer, scripted

BODY = {"model": "scripted", "prompt": "hi", "max_tokens": 8, "stream": True}
DEADLINE_S = 0.5
# Far more than any bound lets through: a client that read it all would be caught by the server's count.
HUGE = 160_000_000
# What a refused answer may have cost the server to send: the cap plus the sockets' buffers.
SENT_AT_MOST = 48_000_000


class RawServer:
    """A TCP server on 127.0.0.1 whose every connection gets `reply(server, connection)` after its request is read.

    It counts the bytes it sent, and notes when a client went away while it was still sending.
    """

    def __init__(self, reply: Callable[[RawServer, socket.socket], None], tls: ssl.SSLContext | None = None) -> None:
        self.reply, self.tls = reply, tls
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.sent = 0
        self.cut_off = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        try:
            if self.tls is not None:
                connection = self.tls.wrap_socket(connection, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                data = connection.recv(65536)
                if not data:
                    return
                head += data
            self.reply(self, connection)
        except OSError:  # a handshake the client broke off, a client gone
            pass
        finally:
            connection.close()

    def send(self, connection: socket.socket, data: bytes) -> bool:
        """Send `data`; False once the client has closed the connection."""
        try:
            connection.sendall(data)
        except OSError:
            self.cut_off.set()
            return False
        self.sent += len(data)
        return True

    def close(self) -> None:
        self.listener.close()


@contextmanager
def serving(reply: Callable[[RawServer, socket.socket], None], tls: ssl.SSLContext | None = None) -> Iterator[RawServer]:
    """A running RawServer for the block."""
    server = RawServer(reply, tls)
    try:
        yield server
    finally:
        server.close()


def head(status: int = 200, kind: str = "text/plain", length: int | None = None) -> bytes:
    """An HTTP/1.1 answer's status line and headers; without a length, the body runs to the close."""
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return f"HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\n{size}Connection: close\r\n\r\n".encode()


def drip(status: int = 200) -> Callable[[RawServer, socket.socket], None]:
    """An answer whose body is a comment line every 0.1 s, for 20 s: each read comes well within any read timeout."""
    def reply(server: RawServer, connection: socket.socket) -> None:
        if not server.send(connection, head(status)):
            return
        ends = time.monotonic() + 20
        while time.monotonic() < ends and server.send(connection, b"# still here\n"):
            time.sleep(0.1)
    return reply


def flood(status: int = 200, kind: str = "text/plain") -> Callable[[RawServer, socket.socket], None]:
    """An answer of HUGE bytes, sent as fast as the client takes them."""
    def reply(server: RawServer, connection: socket.socket) -> None:
        piece = b"# " + b"x" * 65533 + b"\n"
        if server.send(connection, head(status, kind, HUGE)):
            for _ in range(HUGE // len(piece)):
                if not server.send(connection, piece):
                    return
    return reply


def call(base_url: str, request: Callable[[Client], Awaitable[Any]], stall_timeout: float = 5.0) -> Any:
    """Run one request through a fresh Client; a request that hangs fails the test after 10 s."""
    async def run() -> Any:
        client = Client(base_url, None, stall_timeout)
        try:
            return await asyncio.wait_for(request(client), 10)
        finally:
            await client.aclose()
    return asyncio.run(run())


@pytest.fixture(scope="module")
def scripted_server() -> Iterator[ScriptedServer]:
    """One scripted server for the module (each test sets its answers): starting one per test costs its shutdown's poll."""
    with scripted({}) as server:
        yield server


def answering(server: ScriptedServer, answers: dict[str, Any]) -> str:
    """`server` set to give `answers`; its base URL."""
    server.answers = answers
    return server.base_url


# Each kind of answer that is not a token stream, as the runner asks for it.
ANSWERS: dict[str, tuple[Callable[[Client], Awaitable[Any]], str]] = {
    "/metrics": (lambda c: c.get("/metrics", root=True), "/metrics"),
    "/v1/models": (lambda c: c.get("/models"), "/models"),
    "/tokenize": (lambda c: c.post_json("/tokenize", {"prompt": "hi"}, root=True), "/tokenize"),
}


@pytest.mark.parametrize("name", ANSWERS)
def test_an_answer_that_drips_forever_fails_at_the_deadline(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_client, "ANSWER_DEADLINE_S", DEADLINE_S)
    request, path = ANSWERS[name]
    with serving(drip()) as server:
        started = time.monotonic()
        with pytest.raises(RequestFailed) as failed:
            call(server.url(), request, stall_timeout=0.2)
    assert str(failed.value) == f"{path} did not finish within {DEADLINE_S:g} s"
    assert time.monotonic() - started < DEADLINE_S + 3


def test_the_error_body_of_a_stream_is_read_within_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream a watchdog guards (no read timeout) whose error answer never ends its body."""
    monkeypatch.setattr(http_client, "ANSWER_DEADLINE_S", DEADLINE_S)
    with serving(drip(500)) as server:
        started = time.monotonic()
        with pytest.raises(RequestFailed, match=r"^HTTP 500 from /completions: \(its body did not finish within 0.5 s\)$"):
            call(server.url(), lambda c: c.stream(BODY, Trace(), silence=None))
    assert time.monotonic() - started < DEADLINE_S + 3


@pytest.mark.parametrize("name", ANSWERS)
def test_a_huge_answer_is_refused_without_reading_it(name: str) -> None:
    request, path = ANSWERS[name]
    with serving(flood()) as server:
        with pytest.raises(RequestFailed) as failed:
            call(server.url(), request)
        assert server.cut_off.wait(5), "the client read on after refusing the answer"
    assert str(failed.value) == f"{path} answered more than {MAX_ANSWER_BYTES / 1e6:g} MB"
    assert server.sent < SENT_AT_MOST


def test_a_huge_error_body_is_cut_to_an_excerpt() -> None:
    with serving(flood(503)) as server:
        with pytest.raises(RequestFailed) as failed:
            call(server.url(), lambda c: c.stream(BODY, Trace()))
        assert server.cut_off.wait(5), "the client read the whole error body"
    assert str(failed.value).startswith("HTTP 503 from /completions: # xxx") and len(str(failed.value)) < 300
    assert server.sent < SENT_AT_MOST


def test_a_failed_scrape_is_no_metrics_and_comes_back_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the probe, the settling and the cross-check call: an empty list, never a hang."""
    monkeypatch.setattr(http_client, "ANSWER_DEADLINE_S", DEADLINE_S)
    for reply in (drip(), flood()):
        with serving(reply) as server:
            started = time.monotonic()
            samples, reads = call(server.url(), lambda client: MetricsEndpoints(client).read())
            assert samples == [] and [read.ok for read in reads] == [False]
            assert time.monotonic() - started < DEADLINE_S + 3


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_an_event_of_many_lines_is_bounded(end: str, scripted_server: ScriptedServer) -> None:
    """One event of 100 data lines of 900 KB each, every line under the line bound."""
    pieces = []

    def stream() -> Iterator[bytes]:
        for _ in range(100):
            pieces.append(1)
            yield b"data: " + b"a" * 900_000 + end.encode()

    url = answering(scripted_server, {"/v1/completions": stream})
    with pytest.raises(RequestFailed) as failed:  # max_tokens that allow the stream far more than the event
        call(url, lambda c: c.stream({**BODY, "max_tokens": 4096}, Trace()))
    assert str(failed.value) == f"the server sent an event of more than {MAX_EVENT_BYTES:,} bytes without a blank line"
    assert len(pieces) < 20


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_events_far_past_the_event_bound_in_all_pass_whatever_the_framing(end: str, monkeypatch: pytest.MonkeyPatch,
                                                                           scripted_server: ScriptedServer) -> None:
    """Each event's blank line ends it, also where the blank line's two line ends come in separate reads."""
    monkeypatch.setattr(wire, "MAX_EVENT_BYTES", 1000)

    def event(text: str, finish: str | None = None) -> bytes:
        data = json.dumps({"model": "scripted", "choices": [{"text": text, "finish_reason": finish}]})
        return f"data: {data}{end}{end}".encode()

    def stream() -> Iterator[bytes]:
        for _ in range(20):
            whole = event("x" * 200)
            yield whole[: -len(end)]
            time.sleep(0.005)
            yield whole[-len(end):]
        yield event("", "length") + f"data: [DONE]{end}{end}".encode()

    url = answering(scripted_server, {"/v1/completions": stream})
    trace = call(url, lambda c: c.stream({**BODY, "max_tokens": 20}, Trace()))
    assert trace.finished and trace.tokens == 20


def test_a_stream_that_floods_bytes_without_tokens_fails_long_before_the_stall_timeout(scripted_server: ScriptedServer) -> None:
    """Keepalive comments as fast as the client takes them: bounded by the bytes a stream of max_tokens may take."""
    def stream() -> Iterator[bytes]:
        ends = time.monotonic() + 30
        while time.monotonic() < ends:
            yield b": " + b"k" * 30_000 + b"\n\n"

    url = answering(scripted_server, {"/v1/completions": stream})
    started = time.monotonic()
    with pytest.raises(RequestFailed, match="^the server sent more than .* MB in a stream of at most 32 tokens$"):
        call(url, lambda c: c.stream(BODY, Trace()), stall_timeout=60)
    assert time.monotonic() - started < 8


def _stream_of(*chunks: dict) -> Callable[[], Iterator[bytes]]:
    """A stream of the given chunks, then [DONE]."""
    def stream() -> Iterator[bytes]:
        for body in chunks:
            yield b"data: " + json.dumps(body).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"
    return stream


def _text(**extra: Any) -> dict:
    return {"model": "scripted", "choices": [{"text": "x", "finish_reason": None}], **extra}


@pytest.mark.parametrize(("extra", "said"), [
    ({"usage": {"completion_tokens": -4}}, "usage.completion_tokens = -4"),
    ({"usage": {"completion_tokens": 2.5}}, "usage.completion_tokens = 2.5"),
    ({"usage": {"completion_tokens": True}}, "usage.completion_tokens = True"),
    ({"usage": {"completion_tokens": "7"}}, "usage.completion_tokens = '7'"),
    ({"usage": {"completion_tokens": 10**30}}, f"usage.completion_tokens = {10**30}"),
    ({"usage": {"prompt_tokens": -1, "completion_tokens": 1}}, "usage.prompt_tokens = -1"),
    ({"usage": {"prompt_tokens": 1e3, "completion_tokens": 1}}, "usage.prompt_tokens = 1000.0"),
    ({"timings": {"predicted_n": -3}}, "timings.predicted_n = -3"),
    ({"timings": {"predicted_n": False}}, "timings.predicted_n = False"),
], ids=lambda v: json.dumps(v) if isinstance(v, dict) else None)
def test_a_count_that_is_not_a_count_fails_the_request_and_names_it(extra: dict, said: str, scripted_server: ScriptedServer) -> None:
    stream = _stream_of(_text(**extra), {"model": "scripted", "choices": [{"text": "", "finish_reason": "length"}]})
    url = answering(scripted_server, {"/v1/completions": stream})
    with pytest.raises(RequestFailed) as failed:
        call(url, lambda c: c.stream(BODY, Trace()))
    assert str(failed.value) == f"the server sent {said}, which is not a token count"


def test_counts_that_are_counts_are_taken(scripted_server: ScriptedServer) -> None:
    """The control: zero and running counts pass, and the prompt's count is kept."""
    stream = _stream_of(_text(usage={"prompt_tokens": 0, "completion_tokens": 0}),
                        _text(usage={"prompt_tokens": 5, "completion_tokens": 3}),
                        {"model": "scripted", "choices": [{"text": "", "finish_reason": "length"}],
                         "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
    url = answering(scripted_server, {"/v1/completions": stream})
    trace = call(url, lambda c: c.stream(BODY, Trace()))
    assert (trace.tokens, trace.prompt_tokens, trace.counted_by) == (3, 5, "usage")


NASTY = "\x1b]0;owned\x07\x1b[2J\u202e" + "A" * 10_000
HOSTILE_TEXT: dict[str, tuple[Any, Callable[[Client], Awaitable[Any]]]] = {
    "a mid-stream error message": (_stream_of({"error": {"message": NASTY}}), lambda c: c.stream(BODY, Trace())),
    "a model name": (_stream_of(_text(model=NASTY)), lambda c: c.stream(BODY, Trace(), expect_model="scripted")),
    "an error body": ((500, JSON, NASTY.encode()), lambda c: c.stream(BODY, Trace())),
    "malformed data": (lambda: iter([f"data: {{{NASTY}\n\n".encode()]), lambda c: c.stream(BODY, Trace())),
    "a JSON answer's error body": ((400, JSON, NASTY.encode()), lambda c: c.post_json("/completions", {})),
}


@pytest.mark.parametrize("name", HOSTILE_TEXT)
def test_server_text_in_an_error_is_bounded_and_inert(name: str, scripted_server: ScriptedServer) -> None:
    answer, request = HOSTILE_TEXT[name]
    url = answering(scripted_server, {"/v1/completions": answer})
    with pytest.raises(RequestFailed) as failed:
        call(url, request)
    reason = str(failed.value)
    assert printable(reason) == reason, f"a control character reached the error line: {reason!r}"
    assert "\\x1b]0;owned" in reason and len(reason) < 700


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made with openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
                    "-addext", "extendedKeyUsage=serverAuth"], check=True, capture_output=True, timeout=30)
    return cert, key


def _tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


def models(server: RawServer, connection: socket.socket) -> None:
    """A model list, as a server ready to measure answers."""
    server.send(connection, head(200, JSON, len(MODELS)) + MODELS)


def test_a_self_signed_certificate_is_reported_at_once_and_trusted_through_ssl_cert_file(
        certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with serving(models, _tls(certificate)) as server:
        started = time.monotonic()
        with pytest.raises(UntrustedCertificate) as failed:
            call(server.url("https"), lambda c: c.get("/models"))
        assert time.monotonic() - started < 3
        assert str(failed.value).startswith("the server's TLS certificate is not trusted: self-signed certificate")
        assert "set SSL_CERT_FILE to a PEM bundle that holds it" in str(failed.value)
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
        assert call(server.url("https"), lambda c: c.get("/models")).json() == json.loads(MODELS)


def test_a_certificate_file_that_cannot_be_loaded_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(MeasureError, match="^cannot load the trusted certificates that SSL_CERT_FILE or SSL_CERT_DIR names: .+"):
        Client("https://127.0.0.1:1/v1", None)


@pytest.mark.parametrize("request_", [lambda c: c.get("/models"), lambda c: c.stream(BODY, Trace())], ids=["GET", "stream"])
def test_http_to_an_https_server_says_what_probably_happened(certificate: tuple[Path, Path],
                                                              request_: Callable[[Client], Awaitable[Any]]) -> None:
    with serving(models, _tls(certificate)) as server:
        with pytest.raises(RequestFailed) as failed:
            call(server.url("http"), request_)
    reason = str(failed.value)
    assert reason.startswith("the server closed the connection without an HTTP answer (")
    assert reason.endswith("; is it an https:// server?") and ": )" not in reason


def test_https_to_an_http_server_says_what_probably_happened(scripted_server: ScriptedServer) -> None:
    url = answering(scripted_server, {"/v1/models": (200, JSON, MODELS)})
    with pytest.raises(RequestFailed) as failed:
        call(url.replace("http://", "https://"), lambda c: c.get("/models"))
    assert not isinstance(failed.value, UntrustedCertificate)
    assert "the TLS handshake with" in str(failed.value) and "is it an http:// server" in str(failed.value)


def test_a_connection_reset_before_any_answer_says_so() -> None:
    def reset(server: RawServer, connection: socket.socket) -> None:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    with serving(reset) as server:
        with pytest.raises(RequestFailed) as failed:
            call(server.url(), lambda c: c.get("/models"))
    assert str(failed.value).startswith("the server closed the connection without an HTTP answer (/models: ")
    assert "reset" in str(failed.value).lower()


@pytest.fixture(scope="module")
def idle_client() -> Iterator[Client]:
    """A client that never connects, for the wording of its errors."""
    client = Client("http://127.0.0.1:1/v1", None)
    yield client
    asyncio.run(client.aclose())


@pytest.mark.parametrize("kind", [cls for cls in vars(httpx).values()
                                  if isinstance(cls, type) and issubclass(cls, httpx.HTTPError) and cls is not httpx.HTTPStatusError],
                         ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("answered", [False, True])
def test_an_error_without_words_still_gets_a_reason(kind: type[httpx.HTTPError], answered: bool, idle_client: Client) -> None:
    reason = str(idle_client._failure(kind(""), "/x", answered))
    assert reason and not reason.endswith((":", ": ")) and ": )" not in reason and "()" not in reason
