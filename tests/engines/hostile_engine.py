"""A vLLM-shaped server on 127.0.0.1 that tells lies a test scripts: odd facts, broken metrics, echoed keys.

It serves /v1/models, /version, /tokenize and streaming /v1/completions well enough for
`runner measure` to run a whole matrix, and lets each test replace any answer: a route's
body, the /metrics text by scrape number, or the stream a completion request gets.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

JSON = "application/json"
# A route's answer: (status, content type, body); a completion's: that, or the stream's pieces.
Answer = tuple[int, str, bytes]
Completion = Callable[[dict], Answer | Iterator[bytes]]


def sse(document: Any) -> bytes:
    """One SSE event carrying `document` as JSON."""
    return b"data: " + json.dumps(document).encode() + b"\n\n"


def prompt_tokens(body: dict) -> int:
    """The prompt's length in this server's tokens: one per id, or one per word (a chat's: its messages')."""
    if "messages" in body:
        return sum(len(str(m.get("content", "")).split()) for m in body["messages"]) + 3  # the template's
    prompt = body.get("prompt")
    return len(prompt) if isinstance(prompt, list) else len(str(prompt).split())


def stream_tokens(body: dict, tokens: int | None = None, usage: dict | None = None, pause_s: float = 0.002) -> Iterator[bytes]:
    """A well-formed stream of `tokens` (default: max_tokens) one-token chunks with a running usage count."""
    count = body.get("max_tokens", 1) if tokens is None else tokens
    prompt = prompt_tokens(body)
    for index in range(1, count + 1):
        time.sleep(pause_s)
        finish = "length" if index == count else None
        yield sse({"model": "hostile", "choices": [{"index": 0, "text": " w", "finish_reason": finish}],
                   "usage": usage or {"prompt_tokens": prompt, "completion_tokens": index}})
    if not count:
        yield sse({"model": "hostile", "choices": [{"index": 0, "text": "", "finish_reason": "stop"}],
                   "usage": usage or {"prompt_tokens": prompt, "completion_tokens": 0}})
    yield b"data: [DONE]\n\n"


class HostileEngine:
    """The server; `routes`, `metrics` and `completion` may be changed while it runs."""

    def __init__(self, model: dict | None = None, routes: dict[str, Answer] | None = None,
                 metrics: Callable[[int], str] | None = None, completion: Completion | None = None) -> None:
        """Serve `model` as the one model card, `routes` beside the defaults, `metrics(n)` as the n-th scrape."""
        card = {"id": "hostile", "object": "model", "owned_by": "vllm", "max_model_len": 4096, **(model or {})}
        self.routes: dict[str, Answer] = {
            "/v1/models": (200, JSON, json.dumps({"object": "list", "data": [card]}).encode()),
            "/version": (200, JSON, b'{"version": "0.0.1"}'),
            **(routes or {}),
        }
        self.metrics = metrics
        self.completion: Completion = completion or (lambda body: stream_tokens(body))
        self.scrapes = 0
        self.stop = threading.Event()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        # close() waits for serve_forever to look for the shutdown: at its default half second,
        # that wait is most of what a short test takes.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _answer(self, path: str, body: dict) -> Answer | Iterator[bytes]:
        if path == "/metrics" and self.metrics is not None:
            self.scrapes += 1
            return 200, "text/plain", self.metrics(self.scrapes).encode()
        if path in self.routes:
            return self.routes[path]
        if path == "/tokenize":
            return 200, JSON, json.dumps({"tokens": list(range(1, prompt_tokens(body) + 1))}).encode()
        if path in ("/v1/completions", "/v1/chat/completions"):
            return self.completion(body)
        return 404, JSON, b'{"error": "not found"}'

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        engine = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._reply({})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._reply(json.loads(raw or b"{}"))

            def _reply(self, body: dict) -> None:
                answer = engine._answer(self.path.split("?")[0], body)
                try:
                    if isinstance(answer, tuple):
                        status, kind, data = answer
                        self.send_response(status)
                        self.send_header("Content-Type", kind)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for piece in answer:
                        if engine.stop.is_set():
                            return
                        self.wfile.write(piece)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler

    def close(self) -> None:
        """Stop serving and close the socket."""
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def hostile(**settings: Any) -> Iterator[HostileEngine]:
    """A running HostileEngine for the block (see its arguments)."""
    engine = HostileEngine(**settings)
    engine.thread.start()
    try:
        yield engine
    finally:
        engine.close()


def vllm_metrics(generated: float, ttft_count: float = 0, extra: str = "") -> str:
    """A /metrics page in vLLM's names with the given generated-tokens counter."""
    return (
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{model_name="hostile"} 0\n'
        'vllm:num_requests_waiting{model_name="hostile"} 0\n'
        f'vllm:generation_tokens_total{{model_name="hostile"}} {generated}\n'
        f'vllm:time_to_first_token_seconds_bucket{{le="+Inf",model_name="hostile"}} {ttft_count}\n'
        f'vllm:time_to_first_token_seconds_sum{{model_name="hostile"}} {ttft_count * 0.01}\n'
        f'vllm:time_to_first_token_seconds_count{{model_name="hostile"}} {ttft_count}\n'
        + extra
    )
