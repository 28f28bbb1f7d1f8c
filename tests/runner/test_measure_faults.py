"""Runner faults injected through the simulator: each ends in a Failed cell with its reason or a
clean one-line stop, the journal keeps every finished cell, and --resume finishes the rest."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from runner.simulator import Faults, SimConfig
from tests.builders import (
    FAULT_KEY_ENV,
    FAULT_SECRET,
    FAULT_SIM,
    journal_decode_lines,
    measure_with_faults,
    read_bundle,
)

# A cell the faults left alone: measured, though on a busy machine the cross-check may find the
# client (sharing its event loop with the simulator here) distorted it.
MEASURED = ("Valid", "Distorted")


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_KEY_ENV, FAULT_SECRET)


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
    assert asyncio.run(measure_with_faults(FAULT_SIM, out, faults, **changes)) is None
    lines = journal_decode_lines(out)
    assert lines[0][:2] == (1024, 1) and lines[0][2] in MEASURED
    failed = [c for c in read_bundle(out).decode if c.status == "Failed"]
    assert failed and all(reason in c.error for c in failed), [c.error for c in failed]

    assert asyncio.run(measure_with_faults(FAULT_SIM, out)) is None  # a healthy server again
    again = journal_decode_lines(out)
    assert again[: len(lines)] == lines and again.count(lines[0]) == 1
    assert all(c.status in MEASURED for c in read_bundle(out).decode)


def test_server_dies_mid_cell_stops_cleanly_keeps_cells_and_never_writes_the_key(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    log = io.StringIO()
    message = asyncio.run(measure_with_faults(FAULT_SIM, out, {"die_after_s": 0.3}, log=log))
    assert message and "stopped answering" in message and "--resume" in message and "\n" not in message
    lines = journal_decode_lines(out)
    assert lines[0][2] in MEASURED and lines[-1][2] == "Failed"
    assert asyncio.run(measure_with_faults(FAULT_SIM, out, log=log)) is None
    assert journal_decode_lines(out).count(lines[0]) == 1
    assert all(c.status in MEASURED for c in read_bundle(out).decode)
    assert "<redacted>" in (read_bundle(out).launch_command or "")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert FAULT_SECRET not in path.read_text(errors="replace"), path
    assert FAULT_SECRET not in log.getvalue()


@pytest.mark.parametrize(("faults", "expected"), [
    (Faults(never_ready=True), "did not become ready within 1 s"),
    (Faults(wrong_model="some-other-model"), "answered as model 'some-other-model'"),
])
def test_unusable_server_is_a_clean_stop(tmp_path: Path, faults: Faults, expected: str) -> None:
    config = SimConfig(max_model_len=4096, faults=faults)
    message = asyncio.run(measure_with_faults(config, tmp_path / "run.json"))
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
