"""What the runner reports: plain lines where stderr is not a terminal, the live view where it is,
and the command that resumes an interrupted run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runner.live_view import LiveView
from runner.progress import Progress, reporter_for, resume_command
from tests.builders import ROOT

MAIN = str(ROOT / "runner" / "__main__.py")


@pytest.mark.parametrize(("argv", "expected"), [
    (["/usr/local/bin/runner", "measure", "--contexts", "8K,16K"],
     "runner measure --contexts 8K,16K --resume --out content/runs/x.json"),
    ([MAIN, "simulate", "--out", "my run.json", "--duration", "5"],
     "python3 -m runner simulate --out 'my run.json' --duration 5 --resume"),
    (["runner", "measure", "--out=a.json", "--resume"], "runner measure --out=a.json --resume"),
    (["runner", "measure", "--launch-command", "vllm serve m --api-key sk-abcdefghijklmnopqrstu"],
     "runner measure --launch-command 'vllm serve m --api-key <redacted>' --resume --out content/runs/x.json"),
])
def test_resume_command_is_the_typed_one_with_resume_and_out(argv: list[str], expected: str) -> None:
    assert resume_command(argv, Path("content/runs/x.json")) == expected


def test_reporter_is_live_only_on_a_terminal_that_redraws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    leader, follower = os.openpty()
    with open(follower, "w") as terminal, open(tmp_path / "log", "w") as log:
        monkeypatch.setenv("TERM", "xterm-256color")
        assert isinstance(reporter_for(terminal), LiveView)
        assert isinstance(reporter_for(log), Progress)
        monkeypatch.setenv("TERM", "dumb")
        assert isinstance(reporter_for(terminal), Progress)
    os.close(leader)


def test_piped_stderr_gets_plain_lines(tmp_path: Path) -> None:
    """A simulated run with stderr to a pipe: today's lines, one per start and one per result, no escapes."""
    command = [sys.executable, "-m", "runner", "simulate", "--contexts", "1K", "--prefill-contexts", "1K",
               "--concurrency", "1,2", "--duration", "0.3", "--max-output", "16", "--out", str(tmp_path / "run.json")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("token counts: ") and lines[1].startswith("prompts: ")
    # A cell's verdict is the cross-check's (on a busy machine a 0.3 s window can come out Distorted,
    # with its reason in brackets); the line's shape is what this test is about.
    result = r": (Valid|Requests queued|Distorted): [\d,.]+K? tok/s, [\d,]+ ms TTFT( \(.+\))?"
    patterns = [r"\[0/3\] prefill 1K · ETA \d+ s", r"  prefill 1K: [\d,.]+K? prompt tok/s, [\d,]+ ms TTFT",
                r"\[1/3\] decode 1K × 1 · ETA \d+ s", r"  decode 1K × 1" + result,
                r"\[2/3\] decode 1K × 2 · ETA \d+ s", r"  decode 1K × 2" + result]
    assert len(lines) == 2 + len(patterns), done.stderr
    for line, pattern in zip(lines[2:], patterns):
        assert re.fullmatch(pattern, line), line
    assert done.stdout == f"{tmp_path / 'run.json'}\n"
