"""`runner measure --serve`: the runner starts the server, measures it, and always stops it."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner, Result

import runner.fleet.server_log
from runner.bundle.schema import decode_bundle
from runner.cli import main
from runner.journal import journal_path
from tests.fleet.fleet_builders import BROKEN, SIMULATOR, RunnerProcess, listening, no_new_servers, port_of

PLAN = ["--contexts", "1K", "--prefill-contexts", "1K", "--concurrency", "1,2", "--duration", "0.5", "--max-output", "16"]


def measure(out: Path, serve: str, *extra: str, env: dict[str, str] | None = None) -> Result:
    """`runner measure --serve SERVE` in-process, as a user would run it."""
    return CliRunner().invoke(main, ["measure", "--serve", serve, "--out", str(out), *PLAN, *extra], env=env)


@pytest.fixture(autouse=True)
def no_server_left() -> Iterator[None]:
    """Every test here must leave no launched server behind (and cleans up after one that did)."""
    with no_new_servers():
        yield


def test_measure_serve_records_the_command_that_ran_and_stops_the_server(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "sim.json"
    result = measure(out, SIMULATOR)
    assert result.exit_code == 0, result.output
    bundle = decode_bundle(out.read_bytes())
    command = bundle.launch_command or ""
    port = port_of(command)
    assert command == SIMULATOR.replace("{port}", str(port))
    assert bundle.launch is not msgspec.UNSET and bundle.launch.ready_s and bundle.launch.ready_s > 0
    assert bundle.launch.ended == "stopped by the runner (SIGTERM)"
    assert bundle.launch.log == "sim.server.log" and bundle.launch.scheduler is None
    log = (tmp_path / "runs" / "sim.server.log").read_text()
    assert f"Simulating sim-model at http://127.0.0.1:{port}/v1" in log and "[runner] ended: stopped by the runner" in log
    assert all(cell.status == "Valid" for cell in bundle.decode)
    assert not listening(port)


def test_a_server_that_cannot_start_fails_at_once_with_its_exit_status_and_last_lines(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "broken.json"
    started = time.monotonic()
    result = measure(out, BROKEN, "--ready-timeout", "120")
    assert time.monotonic() - started < 30  # not the whole ready timeout
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[-1].startswith("error: the server exited with status 4 before it became ready")
    assert "broken.server.log" in lines[-1]
    assert any("fatal: no such model: missing/model" in line for line in lines[:-1])
    assert not out.exists() and not journal_path(out).exists()
    assert "fatal: no such model" in (tmp_path / "runs" / "broken.server.log").read_text()


def test_a_server_that_dies_mid_run_fails_its_cell_keeps_the_journal_and_resumes(tmp_path: Path) -> None:
    config = tmp_path / "die.json"
    config.write_text(json.dumps({"faults": {"die_after_tokens": 300}}))
    out = tmp_path / "runs" / "dies.json"
    serve = f"{SIMULATOR} --sim-config {config}"
    plan = ["--concurrency", "1,2,4,8", "--duration", "1", "--max-output", "64"]
    died = measure(out, serve, *plan)
    assert died.exit_code == 1, died.output
    last = died.output.splitlines()[-1]
    assert "error: the server exited with status 3 while measuring decode 1K ×" in last and "--resume" in last
    assert "the simulated server died" in died.output
    bundle = decode_bundle(out.read_bytes())
    failed = [cell for cell in bundle.decode if cell.status == "Failed"]
    assert len(failed) == 1 and "the server exited with status 3 during this measurement" in (failed[0].error or "")
    assert bundle.launch.ended == "exited with status 3 on its own"
    finished = [cell for cell in bundle.decode if cell.status == "Valid"]
    config.write_text("{}")  # the next start is a healthy server
    resumed = measure(out, serve, *plan, "--resume")
    assert resumed.exit_code == 0, resumed.output
    again = decode_bundle(out.read_bytes())
    assert all(cell.status == "Valid" for cell in again.decode) and len(again.decode) == 4
    assert [c.total_tok_s for c in again.decode[: len(finished)]] == [c.total_tok_s for c in finished]
    log = (tmp_path / "runs" / "dies.server.log").read_text()
    assert log.count("[runner] starting:") == 2 and "the simulated server died" in log  # both servers' lines


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupting_the_runner_stops_the_server(tmp_path: Path, stop: signal.Signals) -> None:
    out = tmp_path / "run.json"
    runner_process = RunnerProcess(["measure", "--serve", SIMULATOR, "--out", str(out), "--contexts", "1K",
                                    "--concurrency", "1,2,3,4,5,6", "--duration", "2", "--max-output", "16"], tmp_path)
    runner_process.wait_for_first_point()
    port = port_of(json.loads(out.read_text())["launch_command"])
    assert listening(port)
    assert runner_process.interrupt(stop) == 130, "\n".join(runner_process.lines)
    assert "resume with:" in runner_process.lines[-1]
    assert not listening(port)
    assert json.loads(out.read_text())["launch"]["ended"] == "stopped by the runner (SIGTERM)"


def test_the_server_log_is_redacted_and_rotated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner.fleet.server_log, "MAX_LOG_BYTES", 64 * 1024)
    key = "AKIAab/cd+SECRET/KEY99"
    serve = f"echo \"key in use: $OPENAI_API_KEY\"; yes 'a noisy server line' | head -n 20000; exec {SIMULATOR}"
    out = tmp_path / "noisy.json"
    result = measure(out, serve, env={"OPENAI_API_KEY": key, "HF_TOKEN": "hf_envsecretvalue123"})
    assert result.exit_code == 0, result.output
    logs = sorted(tmp_path.glob("noisy.server.log*"))
    assert [p.name for p in logs] == ["noisy.server.log", "noisy.server.log.1"]
    assert all(p.stat().st_size <= 64 * 1024 + 9000 for p in logs)
    for path in tmp_path.iterdir():
        assert b"SECRET" not in path.read_bytes(), path
    assert "Simulating sim-model" in logs[0].read_text()


def test_measure_without_serve_behaves_as_before(tmp_path: Path) -> None:
    """Against a running server, the bundle records no launch and writes no server log."""
    from runner.simulator import SimConfig, running_simulator

    out = tmp_path / "plain.json"
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        result = CliRunner().invoke(main, ["measure", "--base-url", server.base_url, "--out", str(out), *PLAN])
    assert result.exit_code == 0, result.output
    assert "launch" not in json.loads(out.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.journal.jsonl", "plain.json", "plain.requests.jsonl.gz"]
