"""Real engines on CPU, one of each for the whole session: llama.cpp's server, vLLM and SGLang.

How each is started lives beside this file (llama_server.py, vllm_server.py, sglang_server.py);
these fixtures start and stop them for the test modules here.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.builders import FIGURES
from tests.engines import sglang_server as sglang_cpu
from tests.engines import vllm_server as vllm_cpu
from tests.engines.llama_server import (
    LlamaServer,
    llama_server_binary,
    make_tiny_gguf,
    start_llama_server,
)
from tests.engines.serving import engine_missing
from tests.engines.sglang_server import SglangServer
from tests.engines.vllm_server import VllmServer


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A session-wide llama-server with SLOTS slots serving the tiny model."""
    llama_server_binary()
    folder = tmp_path_factory.mktemp("llama")
    server = start_llama_server(make_tiny_gguf(folder / "tiny.gguf"), folder / "server.log")
    yield server
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """One vLLM for the whole test session: starting one is slow and takes gigabytes of memory."""
    if not vllm_cpu.VENV_PYTHON.exists():
        engine_missing(f"no vLLM venv at {vllm_cpu.VENV_PYTHON.parent.parent}", vllm_cpu.SETUP)
    folder = tmp_path_factory.mktemp("vllm")
    server = vllm_cpu.start_vllm_server(vllm_cpu.make_tiny_llama(folder / "tiny-llama"), folder)
    yield server
    vllm_cpu.stop(server.process)


@pytest.fixture(scope="session")
def sglang_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SglangServer]:
    """One SGLang server for the whole session, limited as tests/engines/sglang_server.py says."""
    if not sglang_cpu.SGLANG_PYTHON.exists():
        engine_missing(f"no SGLang venv at {sglang_cpu.SGLANG_PYTHON.parent.parent}", sglang_cpu.SETUP)
    folder = tmp_path_factory.mktemp("sglang")
    try:
        model = sglang_cpu.make_tiny_llama(folder / "model")
        started = time.monotonic()
        server = sglang_cpu.start_sglang_server(model, folder)
    except (RuntimeError, subprocess.SubprocessError) as exc:
        pytest.fail(f"SGLang could not start: {exc}", pytrace=False)
    FIGURES.append(f"SGLang {sglang_cpu.installed_version()} on CPU: ready in {time.monotonic() - started:.0f} s")
    yield server
    server.stop()
