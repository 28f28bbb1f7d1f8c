"""Signed runs: `runner measure --sign KEY` signs the bundle and its records (ssh-keygen -Y), writes SHA-256
sums, and the signatures verify against an allowed_signers file until a byte changes."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from click.testing import CliRunner

from runner.bundle.records import records_path
from runner.bundle.signatures import signature_path, sums_path, verify
from runner.cli import main
from runner.simulator import SimConfig, running_simulator
from tests.builders import make_signing_key

PLAN = ["--contexts", "1K", "--prefill-contexts", "1K", "--concurrency", "1", "--duration", "0.4", "--max-output", "16"]


def test_a_signed_run_verifies_and_a_changed_figure_does_not(tmp_path: Path) -> None:
    key, allowed = make_signing_key(tmp_path, "alice@example.org")
    out = tmp_path / "runs" / "signed.json"
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        result = CliRunner().invoke(main, ["measure", "--base-url", server.base_url, "--out", str(out),
                                           "--sign", str(key), *PLAN])
    assert result.exit_code == 0, result.output
    records = records_path(out)
    for path in (out, records):
        assert signature_path(path).is_file()
        assert verify(path, allowed).verdict == "signed" and verify(path, allowed).signer == "alice@example.org"
    sums = sums_path(out).read_text().splitlines()
    assert sums == [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in (out, records)]
    assert subprocess.run(["sha256sum", "-c", sums_path(out).name], cwd=out.parent, capture_output=True).returncode == 0

    out.write_text(out.read_text().replace('"total_tok_s": ', '"total_tok_s": 1', 1))
    assert verify(out, allowed).verdict == "modified"
    (tmp_path / "other").mkdir()
    _, stranger = make_signing_key(tmp_path / "other", "eve@example.org")
    assert verify(records, stranger).verdict == "unknown signer"
    assert verify(tmp_path / "runs" / "signed.journal.jsonl", allowed).verdict == "unsigned"


def test_a_key_that_cannot_sign_is_one_line_and_the_run_is_kept(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-key"
    bad.write_text("not a key\n")
    out = tmp_path / "run.json"
    with running_simulator(SimConfig(max_model_len=4096)) as server:
        result = CliRunner().invoke(main, ["measure", "--base-url", server.base_url, "--out", str(out),
                                           "--sign", str(bad), *PLAN])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("error: the run is measured, but cannot sign run.json with")
    assert out.is_file() and not signature_path(out).exists()
