"""A real SGLang server on CPU for the runner's tests: the tiny Llama made here, no download.

SGLang runs from its own venv, .engines/sglang (scripts/setup-sglang-cpu.sh, run by `make test`).
The server is limited so that the judging matrix (contexts 1K and 2K, concurrency 1, 4 and 8,
MAX_OUTPUT tokens a request) meets both limits: MAX_RUNNING requests run at once, so of 8 the
rest wait, and a KV pool of KV_TOKENS holds 8 × (1K + output) but not 8 × (2K + output). Every
streamed chunk after the first carries STREAM_INTERVAL tokens or more, so counting chunks
instead of usage would come out short by that factor at least.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx

from tests.builders import ROOT
from tests.engines.serving import free_port, wait_healthy

SGLANG_PYTHON = ROOT / ".engines" / "sglang" / "bin" / "python"
SETUP = "make engines-sglang"
MAX_RUNNING = 4
MAX_OUTPUT = 256
KV_TOKENS = 8 * (1024 + MAX_OUTPUT) + 2048
STREAM_INTERVAL = 2
START_TIMEOUT_S = 300.0


class SglangServer:
    """A running SGLang server: its base URL, the command that started it and its log."""

    def __init__(self, base_url: str, command: list[str], process: subprocess.Popen, log: Path) -> None:
        """Remember how to reach and stop the server."""
        self.base_url = base_url
        self.root = base_url.removesuffix("/v1")
        self.command = command
        self.process = process
        self.log = log

    def metrics(self) -> str:
        """The server's /metrics text right now."""
        return httpx.get(self.root + "/metrics", timeout=10).text

    def stop(self) -> None:
        """Stop the server and the scheduler and detokenizer processes it started (its process group)."""
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def installed_version() -> str:
    """The sglang release in the venv, from its dist-info folder's name."""
    (info,) = SGLANG_PYTHON.parent.parent.glob("lib/python*/site-packages/sglang-*.dist-info")
    return info.name.removeprefix("sglang-").removesuffix(".dist-info")


def make_tiny_llama(out: Path) -> Path:
    """The shared tiny Llama (tests/engines/tiny_llama.py), made with the SGLang venv's torch."""
    subprocess.run([str(SGLANG_PYTHON), str(ROOT / "tests" / "engines" / "tiny_llama.py"), str(out)],
                   check=True, capture_output=True, timeout=300)
    return out


def server_env(cache: Path) -> dict[str, str]:
    """The environment SGLang runs in: CPU engine, one compute thread, offline, every cache inside `cache`.

    One thread: torch's OpenMP threads wait on each other at every step, and on two shared cores
    one of them is often descheduled, which made a few short streams many times slower with two
    threads than with one, side by side on a loaded machine.
    """
    env = os.environ.copy()
    env.update({
        "SGLANG_USE_CPU_ENGINE": "1", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(cache / "hf"), "XDG_CACHE_HOME": str(cache), "TRITON_CACHE_DIR": str(cache / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env


def start_sglang_server(model: Path, folder: Path, max_running: int = MAX_RUNNING,
                        kv_tokens: int = KV_TOKENS) -> SglangServer:
    """Start SGLang on a free loopback port and wait until it serves /health."""
    port = free_port()
    command = [
        str(SGLANG_PYTHON), "-m", "sglang.launch_server", "--model-path", str(model),
        "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--enable-metrics",
        "--attention-backend", "torch_native", "--sampling-backend", "pytorch", "--disable-overlap-schedule",
        "--mem-fraction-static", "0.05", "--max-total-tokens", str(kv_tokens),
        "--max-running-requests", str(max_running), "--stream-interval", str(STREAM_INTERVAL), "--sleep-on-idle",
    ]
    log = folder / "server.log"
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=server_env(folder / "cache"),
                               cwd=folder, start_new_session=True)
    server = SglangServer(f"http://127.0.0.1:{port}/v1", command, process, log)
    try:
        wait_healthy(process, server.root + "/health", log, START_TIMEOUT_S, "SGLang")
    except RuntimeError:
        server.stop()
        raise
    return server
