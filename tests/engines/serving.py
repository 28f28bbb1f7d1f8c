"""What the fixtures of real engines share: a free port, waiting for /health, skip-or-fail."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(process: subprocess.Popen, health_url: str, log: Path, timeout: float, name: str) -> None:
    """Return once `health_url` answers 200; RuntimeError with the log's tail if `process` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}: {log.read_text()[-3000:]}")
        try:
            if httpx.get(health_url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{name} did not become ready in {timeout:g} s: {log.read_text()[-3000:]}")


def engine_missing(reason: str, setup: str) -> None:
    """Fail under CI (CI=true), where the engine must be there; skip elsewhere, naming the `setup` command."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must test against the real engine ({setup})", pytrace=False)
    pytest.skip(f"{reason}: run {setup}")
