"""The live view as a user sees it: `runner simulate` in a real terminal (tmux), typed and read back.

Mid-run the screen shows progress, the ETA and the running cell; at the end it holds the
whole grid; after Ctrl-C the command it prints resumes the run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import FIGURES, ROOT

FIGURE = re.compile(r"[\d,]+(?:\.\d)?K?[*!]?")  # the pages' tok/s, "*" marking Requests queued, "!" Distorted


class Tmux:
    """A private tmux server with one 80×24 window running bash in `cwd`."""

    def __init__(self, cwd: Path, width: int = 80, height: int = 24) -> None:
        if shutil.which("tmux") is None:
            pytest.fail("tmux is not installed: apt-get install -y tmux (make test does it)")
        self.socket = str(cwd / "tmux.sock")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", "live", "-x", str(width), "-y", str(height),
                   "-c", str(cwd), "bash --norc --noprofile", env=env)
        self.wait_for(r"[$#] ?$")  # the prompt: bash reads what is typed from now on

    def _tmux(self, *args: str, env: dict | None = None) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True, capture_output=True, text=True,
                              env=env, timeout=30).stdout

    def type(self, line: str) -> None:
        """Type a command line and press Enter."""
        self._tmux("send-keys", "-t", "live", "-l", line)
        self._tmux("send-keys", "-t", "live", "Enter")

    def key(self, key: str) -> None:
        self._tmux("send-keys", "-t", "live", key)

    def screen(self, joined: bool = True) -> str:
        """What the window shows now; `joined`: lines the terminal wrapped are joined again."""
        return self._tmux("capture-pane", "-p", *["-J"] * joined, "-t", "live")

    def wait_for(self, pattern: str, timeout: float = 90) -> str:
        """The screen once `pattern` matches it; fails with the screen after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if re.search(pattern, screen, re.M):
                return screen
            assert time.monotonic() < deadline, f"no {pattern!r} on screen:\n{screen}"
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    # A short folder: the socket path must stay under the kernel's 108 bytes.
    with tempfile.TemporaryDirectory(prefix="live") as folder:
        terminal = Tmux(Path(folder))
        try:
            yield terminal
        finally:
            terminal.close()


def grid_rows(screen: str, labels: list[str]) -> dict[str, list[str]]:
    """The decode grid's rows as the screen shows them: label -> cells."""
    rows = {}
    for line in screen.splitlines():
        words = line.split()
        if words[:1] and words[0] in labels:
            rows[words[0]] = words[1:]
    return rows


SIMULATE = ("python3 -m runner simulate --contexts 1K,2K,4K --prefill-contexts 1K,4K --concurrency 1,2,4,8 "
            "--max-output 64 --out run.json")


def test_simulated_run_fills_the_grid_on_an_80_column_terminal(tmux: Tmux) -> None:
    started = time.monotonic()
    tmux.type(f"{SIMULATE} --duration 1; echo EXIT=$?")
    mid = tmux.wait_for(r"decode \dK × \d · measuring \d+ of 1 s")
    assert re.search(r"━.* \d+/14 · \d+ s elapsed · ETA \d+ s$", mid, re.M), mid
    assert "›" in mid and "Sustained decode" in mid
    end = tmux.wait_for(r"^EXIT=0$")
    FIGURES.append(f"tmux: a 14-item simulated run took {time.monotonic() - started:.1f} s on an 80×24 terminal")
    assert max(len(line) for line in tmux.screen(joined=False).splitlines()) <= 80
    rows = grid_rows(end, ["1K", "2K", "4K"])
    assert set(rows) == {"1K", "2K", "4K"}, end
    for label, cells in rows.items():
        assert len(cells) == 4 and all(FIGURE.fullmatch(c) for c in cells), (label, end)
    [prefill] = [line.split()[1:] for line in end.splitlines() if line.startswith("tok/s")]
    assert len(prefill) == 2 and all(FIGURE.fullmatch(c) for c in prefill), end
    assert re.search(r"━+ 14/14 · \d+ s elapsed$", end, re.M), end
    assert "finished: every item is measured; bundle: run.json" in end
    assert re.search(r"^run\.json$", end, re.M)  # stdout still gets the bundle path, below the view


def test_ctrl_c_shows_the_command_that_resumes(tmux: Tmux) -> None:
    tmux.type(f"{SIMULATE} --duration 2; echo EXIT=$?")
    tmux.wait_for(r"decode 1K × 2 · measuring")
    tmux.key("C-c")
    stopped = tmux.wait_for(r"^EXIT=130$")
    assert "interrupted: finished items are kept in the journal beside run.json" in stopped
    match = re.search(r"^error: interrupted; finished cells are kept in run\.journal\.jsonl; resume with: (.*)$",
                      stopped, re.M)
    assert match, stopped
    assert match[1] == f"{SIMULATE} --duration 2 --resume"
    rows = grid_rows(stopped, ["1K"])
    assert FIGURE.fullmatch(rows["1K"][0]) and rows["1K"][1:] == ["·", "·", "·"], stopped

    tmux.type("clear")
    tmux.type(f"{match[1]}; echo EXIT=$?")
    end = tmux.wait_for(r"^EXIT=0$")
    rows = grid_rows(end, ["1K", "2K", "4K"])
    assert all(len(c) == 4 and all(FIGURE.fullmatch(x) for x in c) for c in rows.values()) and len(rows) == 3, end
