"""Serving a built site over HTTP (`sitegen serve`): its files only, and no client can tie the server up.

Only what a static host would serve is served: no hidden path (a name starting with "." anywhere
in it) and no folder listing, both 404. Each connection is one request (HTTP/1.0), which must
arrive whole within REQUEST_S seconds, however it trickles in; each write of the answer must get
on within that time too. At most MAX_CONNECTIONS connections are handled at once, a thread each;
one more is answered 503 and closed at once, so clients that send nothing cannot make the server
take threads without bound, and the slots they hold are free again within REQUEST_S.
"""

from __future__ import annotations

import errno
import http.server
import io
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable

from sitegen.errors import UsageError

REQUEST_S = 5.0  # time a client has to send its request (and, with each write, to take the answer)
MAX_CONNECTIONS = 64  # handled at once: a browser opens six at a time per host
_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 5\r\nConnection: close\r\n\r\n"


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files from the output folder, never cached by the browser, without request logging."""

    timeout = REQUEST_S  # set on the connection by socketserver: bounds each read and each write

    def setup(self) -> None:
        """The connection's reads, all done by one deadline (a socket timeout alone bounds each read, and a
        client sending a byte every few seconds would never meet it)."""
        super().setup()
        self.rfile = io.BufferedReader(_ReadBy(self.connection, time.monotonic() + REQUEST_S, REQUEST_S))

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self) -> object:
        """The file's headers; a hidden path is a 404, and a path no file can have (a NUL byte in it) is a
        400, not a dropped connection."""
        if _hidden(self.path):
            self.send_error(404, "File not found")
            return None
        try:
            return super().send_head()
        except ValueError:
            self.send_error(400, "Bad request path")
            return None

    def list_directory(self, path: str | bytes) -> None:
        """No listing of a folder without an index page: a static host shows none either."""
        self.send_error(404, "File not found")


class SiteServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server that handles at most MAX_CONNECTIONS connections at once."""

    request_queue_size = 128  # connections the kernel holds until accepted: a burst waits, rather than retrying a second later

    def __init__(self, address: tuple[str, int], handler: Callable[..., SiteHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        """Hand the connection to a thread of its own while a slot is free; else answer 503 and close it."""
        if not self._slots.acquire(blocking=False):
            _refuse(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread started to release it
            raise

    def process_request_thread(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _ReadBy(io.RawIOBase):
    """A connection's reads, each given only the time left until the deadline; TimeoutError after it
    (which the handler answers by closing the connection)."""

    def __init__(self, connection: socket.socket, deadline: float, timeout: float) -> None:
        self._connection = connection
        self._deadline = deadline
        self._timeout = timeout  # the connection's own, put back for the writes

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self._connection.settimeout(left)
        try:
            return self._connection.recv_into(buffer)
        finally:
            self._connection.settimeout(self._timeout)


def _hidden(path: str) -> bool:
    """Whether a request path (as sent, percent-encoded, perhaps with a query) names a hidden file or
    folder, or goes through one: any part starting with "." ("..", "." included)."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    return any(part.startswith(".") for part in urllib.parse.unquote(path, errors="surrogatepass").split("/"))


def _refuse(request: socket.socket) -> None:
    """Answer a connection there is no slot for with a 503, without waiting on the client."""
    request.setblocking(False)
    try:
        request.send(_BUSY)
    except OSError:
        pass


def listen(host: str, port: int, directory: str) -> SiteServer:
    """A server of the site in `directory` bound to host:port; a port or address that cannot be used is one UsageError line."""

    def handler(*args: object) -> SiteHandler:
        return SiteHandler(*args, directory=directory)

    try:
        return SiteServer((host, port), handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is in use; pass --port") from None
        raise UsageError(f"cannot listen on port {port} on {host}: {exc.strerror}") from None
