"""Red-team cases against `runner`: --model, overrides, overwrites, journals, bad URLs and full disks, each one line."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import runner.journal
from runner.bundle.schema import decode_bundle, encode_bundle
from runner.cli import main
from runner.journal import journal_path
from runner.simulator import SimConfig, running_simulator
from tests.builders import ROOT, make_bundle
from tests.engines.scripted_server import JSON, scripted

QUICK = ["--contexts", "1K", "--prefill-contexts", "1K", "--concurrency", "1", "--duration", "0.2", "--max-output", "8"]
TWO_MODELS = SimConfig(max_model_len=4096, other_models=["other-model"])


def invoke(*args: str) -> Result:
    """Run `runner ARGS` in-process, as a user would from the shell."""
    return CliRunner().invoke(main, list(args))


def assert_one_error(result: Result, *phrases: str, progress: bool = False) -> None:
    """Exit non-zero with exactly one `error:` line holding the phrases (after the progress log, if any), no traceback."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert errors == lines[-1:] and (progress or len(lines) == 1), result.output
    assert "Traceback" not in result.output
    for phrase in phrases:
        assert phrase in errors[0], errors[0]


def test_probe_model_picks_the_served_model_and_names_the_served_ones_when_absent() -> None:
    with running_simulator(TWO_MODELS) as server:
        missing = invoke("probe", "--base-url", server.base_url, "--model", "no-such", *QUICK)
        several = invoke("probe", "--base-url", server.base_url, *QUICK)
        chosen = invoke("probe", "--base-url", server.base_url, "--model", "sim-model", *QUICK)
    assert_one_error(missing, "'no-such' is not served", "sim-model, other-model")
    assert_one_error(several, "serves several models (sim-model, other-model); choose one with --model")
    assert chosen.exit_code == 0, chosen.output
    assert "model:        sim-model (display name 'sim-model')" in chosen.output


def test_measure_on_a_two_model_server_records_the_chosen_model_and_the_display_name(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with running_simulator(TWO_MODELS) as server:
        result = invoke("measure", "--base-url", server.base_url, "--model", "sim-model", "--model-name", "Shown Name",
                        "--out", str(out), *QUICK)
    assert result.exit_code == 0, result.output
    bundle = decode_bundle(out.read_bytes())
    assert (bundle.run.served_model, bundle.model) == ("sim-model", "Shown Name")
    assert all(cell.status == "Valid" for cell in bundle.decode)


@pytest.mark.parametrize(("flags", "phrase"), [
    (["--id", "../../escape"], "--id: '../../escape' is not a run id"),
    (["--id", "Bad Id"], "--id: 'Bad Id' is not a run id"),
    (["--id", "-x"], "--id: '-x' is not a run id"),
    (["--gpu-count", "0"], "--gpu-count: expected a whole number >= 1"),
    (["--gpu-count", "-3"], "--gpu-count: expected a whole number >= 1"),
    (["--vram-per-gpu-gb", "-1"], "--vram-per-gpu-gb: expected a number >= 0"),
    (["--vram-per-gpu-gb", "nan"], "--vram-per-gpu-gb: not a finite number"),
    (["--vram-per-gpu-gb", "1e308", "--gpu-count", "2"], "too large a total"),
    (["--model-name", ""], "--model-name: expected a string of length >= 1"),
])
def test_overrides_a_bundle_cannot_hold_stop_before_measuring(tmp_path: Path, flags: list[str], phrase: str) -> None:
    # No server listens at the URL: the check comes first, so nothing is contacted or written.
    result = invoke("measure", "--base-url", "http://127.0.0.1:9/v1", "--ready-timeout", "0",
                    "--out", str(tmp_path / "runs" / "x.json"), *flags, *QUICK)
    assert_one_error(result, phrase)
    assert list(tmp_path.rglob("*")) == []


@pytest.mark.parametrize(("url", "phrase"), [
    ("http://127.0.0.1:99999/v1", "Port out of range"),
    ("http://[::1/v1", "Invalid IPv6 URL"),
    ("ftp://127.0.0.1/v1", "not an http(s) URL"),
    ("127.0.0.1:8000", "not an http(s) URL"),
    ("http:///v1", "not an http(s) URL"),
    ("http://127.0.0.1:0/v1", "port 0"),
    ("http://127.0.0.1:8000/v1 x", "spaces or control characters"),
])
def test_bad_base_urls_are_one_usage_error(url: str, phrase: str) -> None:
    result = invoke("probe", "--base-url", url, "--ready-timeout", "0")
    assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output and "Invalid value for '--base-url'" in result.output and phrase in result.output


@pytest.mark.parametrize("models", [b'{"data":[1,2]}', b'{"data":"x"}', b"[1]", b'{"data":[{"id":5}]}', b"not json", b"null"])
def test_junk_model_lists_are_one_line(models: bytes) -> None:
    with scripted({"/v1/models": (200, JSON, models)}) as server:
        result = invoke("probe", "--base-url", server.base_url, "--ready-timeout", "0.2")
    assert_one_error(result, "did not become ready")


def test_measure_refuses_to_overwrite_a_bundle_without_a_journal_unless_told(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    original = encode_bundle(make_bundle())
    out.write_bytes(original)
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        refused = invoke("measure", "--base-url", server.base_url, "--out", str(out), *QUICK)
        assert out.read_bytes() == original and not journal_path(out).exists()
        replaced = invoke("measure", "--base-url", server.base_url, "--out", str(out), "--replace", *QUICK)
    assert_one_error(refused, f"{out} exists already and has no journal beside it; pass --replace")
    assert replaced.exit_code == 0, replaced.output
    assert decode_bundle(out.read_bytes()).run.served_model == "sim-model"


def test_a_torn_journal_resumes_any_number_of_times(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    plan = ["--contexts", "1K,2K", "--prefill-contexts", "1K", "--concurrency", "1,2", "--duration", "0.2", "--max-output", "8"]
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        assert invoke("measure", "--base-url", server.base_url, "--out", str(out), *plan).exit_code == 0
        journal = journal_path(out)
        lines = journal.read_bytes().splitlines(keepends=True)
        for round_ in range(3):
            # A crash mid-write: the last cell's line cut in half, then --resume measures it again.
            journal.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
            result = invoke("measure", "--base-url", server.base_url, "--out", str(out), "--resume", *plan)
            assert result.exit_code == 0, (round_, result.output)
            lines = journal.read_bytes().splitlines(keepends=True)
            assert all(line.endswith(b"\n") and json.loads(line) for line in lines)
    assert len(decode_bundle(out.read_bytes()).decode) == 4


def test_a_second_resume_of_one_journal_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        plan = ["--base-url", server.base_url, "--out", str(out), "--contexts", "1K", "--prefill-contexts", "1K",
                "--concurrency", "1,2,4,8", "--duration", "1", "--max-output", "8"]
        first = subprocess.Popen([sys.executable, "-m", "runner", "measure", *plan], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not journal_path(out).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            second = invoke("measure", *plan, "--resume")
        finally:
            first.wait(60)
    assert_one_error(second, "is in use by another runner measuring this run")
    assert first.returncode == 0, first.stderr
    entries = [json.loads(line) for line in journal_path(out).read_bytes().splitlines()[1:]]
    items = [(e["kind"], (e.get("cell") or e.get("point"))["context_tokens"], (e.get("cell") or {}).get("concurrency"))
             for e in entries]
    assert len(items) == len(set(items)) == 5  # each item measured once, by the first runner


@pytest.mark.parametrize("where", ["below-a-file", "proc"])
def test_an_out_that_cannot_be_written_is_one_line(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "run.json" if where == "below-a-file" else Path("/proc/speed-matrix-test/run.json")
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        result = invoke("measure", "--base-url", server.base_url, "--out", str(out), *QUICK)
    assert_one_error(result, "cannot write")


def test_a_full_disk_during_a_run_is_one_line_and_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle's fsync fails as a full disk fails it (ENOSPC); the journal keeps what was finished."""
    out = tmp_path / "run.json"
    real_fsync = os.fsync
    writes = {"bundle": 0}

    def fsync(descriptor: int) -> None:
        if os.readlink(f"/proc/self/fd/{descriptor}").endswith(".tmp"):
            writes["bundle"] += 1
            if writes["bundle"] > 1:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(descriptor)

    monkeypatch.setattr(runner.journal.os, "fsync", fsync)
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        result = invoke("measure", "--base-url", server.base_url, "--out", str(out), *QUICK)
    assert_one_error(result, "No space left on device", f"finished cells are kept in {journal_path(out)}", progress=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.journal.jsonl", "run.json"]
    assert [json.loads(line)["kind"] for line in journal_path(out).read_bytes().splitlines()] == ["header", "prefill"]


def test_a_real_full_disk_during_a_run_is_one_line_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    """The same on a tmpfs of three pages: the journal outgrows its page while the bundle and its temporary copy take the others."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("no permission to mount a tmpfs here; the patched case covers it")
    try:
        out = disk / "run.json"
        with running_simulator(SimConfig(max_model_len=4096)) as server:
            result = invoke("measure", "--base-url", server.base_url, "--out", str(out), "--contexts", "1K,2K",
                            "--prefill-contexts", "1K,2K", "--concurrency", "1,2,3,4", "--duration", "0.1", "--max-output", "8")
        assert_one_error(result, "No space left on device", progress=True)
        assert sorted(p.name for p in disk.iterdir()) == ["run.journal.jsonl", "run.json", "run.requests.jsonl.gz"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_fifo_given_as_sim_config_is_refused_without_reading_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "sim.json")
    done = subprocess.run([sys.executable, "-m", "runner", "simulate", "--sim-config", str(tmp_path / "sim.json"), *QUICK,
                           "--out", str(tmp_path / "run.json")], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stderr) == (1, f"error: {tmp_path / 'sim.json'}: cannot read: not a regular file\n")


def test_a_fifo_at_out_is_refused_without_reading_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "run.json")
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        result = invoke("measure", "--base-url", server.base_url, "--out", str(tmp_path / "run.json"), "--replace", *QUICK)
    assert_one_error(result, "is not a regular file")
