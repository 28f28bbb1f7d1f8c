"""A real HTTP server on 127.0.0.1 whose answers a test scripts: junk /v1/models, endless or silent streams."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# An answer: (status, content type, body) or a generator of body pieces sent as they come (a stream).
Answer = tuple[int, str, bytes] | Callable[[], Iterator[bytes]]

MODELS = json.dumps({"object": "list", "data": [{"id": "scripted", "max_model_len": 4096, "owned_by": "vllm"}]}).encode()
JSON = "application/json"


def chunk(text: str = "x", finish: str | None = None) -> bytes:
    """One SSE data line of a completions stream."""
    body = {"model": "scripted", "choices": [{"text": text, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class ScriptedServer:
    """Serves `answers[path]` for GET and POST; unknown paths get 404. Streams end when their generator does."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.stop = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer()

            def _answer(self) -> None:
                answer = server.answers.get(self.path.split("?")[0])
                if answer is None:
                    answer = (404, JSON, b'{"error": "not found"}')
                try:
                    if callable(answer):
                        self.send_response(200)
                        self.send_header("Content-Type", "text/event-stream")
                        self.end_headers()
                        for piece in answer():
                            if server.stop.is_set():
                                return
                            self.wfile.write(piece)
                            self.wfile.flush()
                        return
                    status, kind, body = answer
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # close() waits for serve_forever to look for the shutdown: at its default half second,
        # that wait is most of what a short test takes.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def scripted(answers: dict[str, Answer]) -> Iterator[ScriptedServer]:
    """A running ScriptedServer for the block."""
    server = ScriptedServer(answers)
    server.thread.start()
    try:
        yield server
    finally:
        server.close()


def every(seconds: float, piece: bytes, limit: float = 120.0) -> Callable[[], Iterator[bytes]]:
    """A stream that sends `piece` every `seconds`, for at most `limit` seconds (so a failing test ends)."""
    def stream() -> Iterator[bytes]:
        ends = time.monotonic() + limit
        while time.monotonic() < ends:
            yield piece
            time.sleep(seconds)
    return stream
