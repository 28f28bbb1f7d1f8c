"""`sitegen` as a program (`python -m sitegen`): what it prints when piped, and its exit status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.builders import ROOT
from tests.sample_site import sample_runs, write_content


def _sitegen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sitegen", *args], cwd=ROOT, capture_output=True, text=True)


def test_a_piped_build_prints_its_one_line_report_and_exits_0(tmp_path: Path) -> None:
    done = _sitegen("build", "--content", str(write_content(tmp_path)), "--out", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.startswith(f"built {len(sample_runs())} runs and ")
    assert (tmp_path / "site" / "index.html").is_file()


def test_errors_exit_non_zero_with_one_line() -> None:
    done = _sitegen("build", "--content", "/nonexistent")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["error: /nonexistent/runs: no such folder (--content should be the folder holding runs/ and pages/)"]
    assert _sitegen("no-such-command").returncode == 2
