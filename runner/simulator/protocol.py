"""A minimal HTTP/1.1 server side over asyncio streams: parse requests, write responses.

Kept byte-level on purpose so faults can cut, stall or corrupt a response
anywhere. Supports Content-Length request bodies, keep-alive, and chunked
responses for SSE.
"""

from __future__ import annotations

import asyncio
import http
import socket
import struct

import msgspec

MAX_HEADER_LINES = 100
MAX_BODY_BYTES = 64 * 1024 * 1024


class HttpError(Exception):
    """A request the server cannot parse; answered with `status` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        """Fail with HTTP `status` and a human-readable `message`."""
        super().__init__(message)
        self.status = status


class HttpRequest(msgspec.Struct, kw_only=True):
    """One parsed HTTP request."""

    method: str
    path: str
    version: str
    headers: dict[str, str]
    body: bytes
    # Loop time when its request line arrived: where the server's own TTFT starts.
    received: float = 0.0

    @property
    def keep_alive(self) -> bool:
        """Whether the client lets the connection stay open after the response."""
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return connection == "keep-alive"
        return connection != "close"


async def _line(reader: asyncio.StreamReader) -> bytes:
    """One CRLF-terminated line; an over-long one is a 431."""
    try:
        return await reader.readline()
    except ValueError:
        raise HttpError(431, "request line or header too long") from None


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """Read one request; None when the client closed the connection between requests."""
    line = await _line(reader)
    if not line:
        return None
    received = asyncio.get_running_loop().time()
    try:
        method, target, version = line.decode("latin-1").split()
    except ValueError:
        raise HttpError(400, "malformed request line") from None
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        raw = await _line(reader)
        if raw in (b"\r\n", b"\n", b""):
            break
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise HttpError(400, "malformed header line")
        headers[name.strip().lower()] = value.strip()
    else:
        raise HttpError(431, "too many header lines")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HttpError(411, "chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise HttpError(400, "bad Content-Length") from None
    if not 0 <= length <= MAX_BODY_BYTES:
        raise HttpError(413, "request body too large")
    body = await reader.readexactly(length) if length else b""
    return HttpRequest(method=method.upper(), path=target.split("?", 1)[0], version=version, received=received,
                       headers=headers, body=body)


def _head(status: int, headers: dict[str, str]) -> bytes:
    """Status line and headers, ending with the blank line."""
    lines = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def response_bytes(status: int, body: bytes, content_type: str, keep_alive: bool,
                   extra_headers: dict[str, str] | None = None) -> bytes:
    """A complete response with a Content-Length body."""
    headers = {
        "content-type": content_type,
        "content-length": str(len(body)),
        "connection": "keep-alive" if keep_alive else "close",
        **(extra_headers or {}),
    }
    return _head(status, headers) + body


class ChunkedStream:
    """A response sent in chunked transfer encoding (used for SSE)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        """Stream over `writer`; call start() first."""
        self._writer = writer

    async def start(self, content_type: str) -> None:
        """Send the status line and headers of a 200 streaming response."""
        self._writer.write(_head(200, {
            "content-type": content_type,
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
        }))
        await self._writer.drain()

    async def send(self, data: bytes) -> None:
        """Send `data` as one chunk."""
        self._writer.write(b"%x\r\n%b\r\n" % (len(data), data))
        await self._writer.drain()

    async def end(self) -> None:
        """Send the terminating zero-length chunk."""
        self._writer.write(b"0\r\n\r\n")
        await self._writer.drain()


def reset_connection(writer: asyncio.StreamWriter) -> None:
    """Drop the connection with a TCP RST (SO_LINGER 0) instead of an orderly close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass  # the socket is already gone; aborting below is all that is left to do
    writer.transport.abort()
