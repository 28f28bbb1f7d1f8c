"""Runner faults injected through the simulator: each ends in a Failed cell with its reason or a
clean one-line stop, the journal keeps every finished cell, and --resume finishes the rest."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from runner.bundle.schema import Bundle, decode_bundle
from runner.errors import MeasureError
from runner.journal import journal_path
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.simulator import Faults, SimConfig, start_simulator

FAST = SimConfig(max_model_len=4096, base_step_ms=4, per_seq_ms=0, per_ktoken_ms=0)
# A cell the faults left alone: measured, though on a busy machine the cross-check may find the
# client (sharing its event loop with the simulator here) distorted it.
MEASURED = ("Valid", "Distorted")
SECRET = "sk-fault-test-0123456789abcdef"


def _options(base_url: str, out: Path, **changes: object) -> Options:
    """A small, quick matrix: one context, three concurrency levels, 1 s windows."""
    settings = dict(base_url=base_url, out=out, contexts=[1024], prefill_contexts=[1024], concurrency=[1, 2, 3],
                    duration=1.0, max_output=256, stall_timeout=1.0, ready_timeout=1.0,
                    api_key_env="SPEED_MATRIX_TEST_KEY", launch_command=f"vllm serve m --api-key {SECRET}")
    settings.update(changes)
    return Options(**settings)


def _decode_lines(out: Path) -> list[tuple[int, int, str]]:
    """(context, concurrency, status) of every decode line in the journal beside `out`."""
    lines = []
    for raw in journal_path(out).read_bytes().splitlines():
        entry = json.loads(raw)
        if entry["kind"] == "decode":
            lines.append((entry["cell"]["context_tokens"], entry["cell"]["concurrency"], entry["cell"]["status"]))
    return lines


async def _run(config: SimConfig, out: Path, faults: dict | None = None, after_cells: int = 1,
               log: io.StringIO | None = None, **changes: object) -> str | None:
    """Measure a fresh simulator, arming `faults` once `after_cells` decode cells are journaled.

    Returns the one-line stop message, or None when the matrix ran to its end.
    """
    server = await start_simulator(config)
    task = asyncio.create_task(measure(_options(server.base_url, out, resume=journal_path(out).exists(), **changes),
                                       progress=Progress(0, log or io.StringIO())))
    try:
        if faults:
            while not task.done() and not (journal_path(out).exists() and len(_decode_lines(out)) >= after_cells):
                await asyncio.sleep(0.02)
            server.set_faults(**faults)
        try:
            await task
        except MeasureError as exc:
            return str(exc)
        return None
    finally:
        await server.close()


def _bundle(out: Path) -> Bundle:
    return decode_bundle(out.read_bytes())


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPEED_MATRIX_TEST_KEY", SECRET)


@pytest.mark.parametrize(("faults", "reason", "changes"), [
    ({"reset_after_tokens": 5}, "connection lost", {}),
    ({"error_next": 100, "error_status": 429}, "HTTP 429", {}),
    ({"error_next": 100, "error_status": 500}, "HTTP 500", {}),
    ({"error_next": 100, "error_status": 503}, "HTTP 503", {}),
    ({"stall_after_tokens": 5, "stall_s": 3.0}, "no data from the server for 0.5 s", {"stall_timeout": 0.5}),
    ({"malformed_every": 3}, "malformed SSE data", {}),
])
def test_fault_fails_the_cell_and_resume_finishes(tmp_path: Path, faults: dict, reason: str, changes: dict) -> None:
    out = tmp_path / "run.json"
    assert asyncio.run(_run(FAST, out, faults, **changes)) is None
    lines = _decode_lines(out)
    assert lines[0][:2] == (1024, 1) and lines[0][2] in MEASURED
    failed = [c for c in _bundle(out).decode if c.status == "Failed"]
    assert failed and all(reason in c.error for c in failed), [c.error for c in failed]

    assert asyncio.run(_run(FAST, out)) is None  # a healthy server again
    again = _decode_lines(out)
    assert again[: len(lines)] == lines and again.count(lines[0]) == 1
    assert all(c.status in MEASURED for c in _bundle(out).decode)


def test_server_dies_mid_cell_stops_cleanly_keeps_cells_and_never_writes_the_key(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    log = io.StringIO()
    message = asyncio.run(_run(FAST, out, {"die_after_s": 0.3}, log=log))
    assert message and "stopped answering" in message and "--resume" in message and "\n" not in message
    lines = _decode_lines(out)
    assert lines[0][2] in MEASURED and lines[-1][2] == "Failed"
    assert asyncio.run(_run(FAST, out, log=log)) is None
    assert _decode_lines(out).count(lines[0]) == 1
    assert all(c.status in MEASURED for c in _bundle(out).decode)
    assert "<redacted>" in (_bundle(out).launch_command or "")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET not in log.getvalue()


@pytest.mark.parametrize(("faults", "expected"), [
    (Faults(never_ready=True), "did not become ready within 1 s"),
    (Faults(wrong_model="some-other-model"), "answered as model 'some-other-model'"),
])
def test_unusable_server_is_a_clean_stop(tmp_path: Path, faults: Faults, expected: str) -> None:
    config = SimConfig(max_model_len=4096, faults=faults)
    message = asyncio.run(_run(config, tmp_path / "run.json"))
    assert message and expected in message and "\n" not in message


def test_cli_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from runner.cli import main

    result = CliRunner().invoke(main, ["measure", "--base-url", "http://127.0.0.1:9/v1", "--ready-timeout", "0.5",
                                       "--out", str(tmp_path / "x.json")])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith("error: ")
    assert "did not become ready" in result.output
    assert "Traceback" not in result.output
