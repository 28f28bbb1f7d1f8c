"""What the fleet tests share: sweep files, the commands of their servers, and leftover checks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

# The simulator as a launched server, the way a user starts it.
SIMULATOR = f"{sys.executable} -m runner simulate --serve-only --port {{port}}"
# A server that cannot start: it says why on stderr and exits.
BROKEN = "echo 'fatal: no such model: missing/model' >&2; exit 4"
QUICK = {"contexts": "1K", "prefill_contexts": "1K", "concurrency": "1,2", "duration": 0.5, "max_output": 16}


def sweep_file(path: Path, setups: list[dict], defaults: dict | None = None) -> Path:
    """Write a sweep file of `setups` under `defaults` (QUICK by default), as a user would."""
    def value(item: object) -> str:
        if isinstance(item, dict):
            return "{ " + ", ".join(f"{k} = {value(v)}" for k, v in item.items()) + " }"
        if isinstance(item, str):
            return '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return str(item).lower() if isinstance(item, bool) else str(item)

    lines = ["[defaults]", *(f"{k} = {value(v)}" for k, v in (QUICK if defaults is None else defaults).items())]
    for setup in setups:
        lines += ["", "[[setup]]", *(f"{k} = {value(v)}" for k, v in setup.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def listening(port: int) -> bool:
    """Whether anything accepts connections on 127.0.0.1:`port`."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def processes_with(word: str) -> list[int]:
    """Pids of live processes whose command line holds `word` (this one's excepted)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = (entry / "stat").read_text().split()[2]
        except OSError:
            continue
        if word in command and state != "Z":
            found.append(int(entry.name))
    return found


def kill_all(pids: list[int]) -> None:
    """Clean up after a failed test, so later tests do not inherit its servers."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


SERVER_WORDS = ("--serve-only", "llama-server")


@contextmanager
def no_new_servers() -> Iterator[None]:
    """The block may start servers but must leave none running (any left are killed, then reported)."""
    before = {pid for word in SERVER_WORDS for pid in processes_with(word)}
    yield
    left = [pid for word in SERVER_WORDS for pid in processes_with(word) if pid not in before]
    kill_all(left)
    assert not left, f"servers left running: {left}"


def port_of(command: str) -> int:
    """The port a launch command served on."""
    return int(command.split("--port ")[1].split()[0])


def terminal_signals() -> None:
    """In a child before exec: SIGINT and SIGTERM delivered as a terminal delivers them, whatever
    mask or disposition the process that started the tests passed down."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class RunnerProcess:
    """`python -m runner ARGS` as a child whose stderr is read as it comes, interrupted as a user would."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.lines: list[str] = []
        self._measured = threading.Event()
        # faulthandler: a runner that does not end prints its threads' stacks on SIGABRT (see stuck)
        self.process = subprocess.Popen([sys.executable, "-m", "runner", *args], cwd=cwd, stderr=subprocess.PIPE,
                                        text=True, preexec_fn=terminal_signals, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("[1/"):
                self._measured.set()

    def wait_for_first_point(self, timeout: float = 180) -> None:
        """Until the first point is measured: the server is up and answering."""
        if not self._measured.wait(timeout):
            self.stuck(f"no point measured within {timeout:g} s")

    def stuck(self, why: str) -> NoReturn:
        """Fail the test with the runner's output and, from faulthandler, where each of its threads was."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGABRT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=10)
        raise AssertionError(why + ":\n" + "\n".join(self.lines))

    def interrupt(self, which: signal.Signals, timeout: float = 90) -> int:
        """Send `which`; the exit status once the runner has ended and its stderr is read to the end."""
        self.process.send_signal(which)
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stuck(f"still running {timeout:g} s after {which.name}")
        self._reader.join(timeout=10)
        return status
