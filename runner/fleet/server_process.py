"""The server the runner starts itself (`runner measure --serve "CMD"`), waits for, and always stops.

The command runs through the shell in a process session of its own, so the whole tree it starts
(an engine's workers too) is one process group: stopping it is SIGTERM to the group, then
SIGKILL to whatever is left after STOP_GRACE_S. `{port}` in the command becomes a free port.
Its output goes to a ServerLog beside the bundle. SIGTERM stops the runner as Ctrl-C does
(runner.interrupts), so the server is stopped then too.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from runner.bundle.schema import ServerLaunch
from runner.bundle.terminal_text import printable
from runner.client import Client
from runner.errors import RequestFailed, ServerError
from runner.fleet.server_log import ServerLog

# Seconds a server has to exit after SIGTERM before the rest of its process group is killed.
STOP_GRACE_S = 30.0
PORT_FIELD = "{port}"
_POLL_S = 0.2


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def with_env(command: str, env: Mapping[str, str]) -> str:
    """The command as it ran, its added environment written in front: `A=1 vllm serve …`."""
    assigned = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
    return f"{assigned} {command}" if assigned else command


def scheduler_job() -> ServerLaunch:
    """The batch job this process runs in, from the scheduler's environment (Slurm's), or nothing."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return ServerLaunch()
    return ServerLaunch(scheduler="slurm", job_id=job, node=os.environ.get("SLURMD_NODENAME") or socket.gethostname())


class ServerProcess:
    """One launched server: its command as run, its process group, its log, and how it ended."""

    def __init__(self, command: str, env: Mapping[str, str], log: ServerLog) -> None:
        """Start `command` (with `{port}` filled in) with `env` added to the environment."""
        self.port = free_port() if PORT_FIELD in command else None
        self.command = command.replace(PORT_FIELD, str(self.port)) if self.port else command
        self.recorded_command = with_env(self.command, env)
        self.log = log
        self.started = time.monotonic()
        self.ready_s: float | None = None
        self.stopped_by_runner = False
        self.ended: str | None = None
        log.note(f"starting: {self.recorded_command}")
        self.process = subprocess.Popen(
            ["/bin/sh", "-c", self.command], env={**os.environ, **env}, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        assert self.process.stdout is not None
        self._drainer = log.drain(self.process.stdout)

    def base_url(self, given: str) -> str:
        """The OpenAI base URL of this server: the given one, on the launched port where there is one."""
        if self.port is None:
            return given
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def exit_status(self) -> int | None:
        """The server's exit status once it has ended (negative: the signal that ended it), else None."""
        return self.process.poll()

    async def wait_ready(self, client: Client, timeout: float) -> None:
        """Wait until /health answers (200, or 404 where the server has none), failing at once if the server exits."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.exit_status is not None:
                raise ServerError(f"the server {self.describe_exit()} before it became ready")
            try:
                response = await client.get("/health", root=True, timeout=min(5.0, max(0.1, deadline - time.monotonic())))
                if response.status_code in (200, 404):
                    self.ready_s = time.monotonic() - self.started
                    return
                last = f"/health answered HTTP {response.status_code}"
            except RequestFailed as exc:
                last = str(exc)
            await asyncio.sleep(_POLL_S)
        raise ServerError(f"the server did not become ready within {timeout:g} s (last: {last})")

    async def exited_within(self, seconds: float) -> bool:
        """Whether the server exits within `seconds`: after a failed request, a dying server is
        given that long to be seen dead, so the failure is put down to its death."""
        deadline = time.monotonic() + seconds
        while self.exit_status is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.exit_status is not None

    def mark_ready(self) -> None:
        """The server listed its models too: ready from here on."""
        self.ready_s = time.monotonic() - self.started

    def describe_exit(self) -> str:
        """How the process ended, in words: "exited with status 1", "was killed by SIGKILL"."""
        status = self.exit_status
        if status is None:
            return "is still running"
        if status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            return f"was killed by {name}"
        return f"exited with status {status}"

    def stop(self) -> str:
        """Stop the server's whole process group (SIGTERM, then SIGKILL after STOP_GRACE_S); how it ended."""
        if self.ended is not None:
            return self.ended
        if self.exit_status is not None:
            self.ended = f"{self.describe_exit()} on its own"
        else:
            self.stopped_by_runner = True
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_GRACE_S)
                clean = self.exit_status in (0, -signal.SIGTERM, 128 + signal.SIGTERM)
                self.ended = "stopped by the runner (SIGTERM)" + ("" if clean else f"; it {self.describe_exit()}")
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait()
                self.ended = f"stopped by the runner: killed with SIGKILL, still running {STOP_GRACE_S:g} s after SIGTERM"
        self._signal(signal.SIGKILL)  # whatever the server left behind in its group
        self._drainer.join(timeout=5.0)
        self.log.note(f"ended: {self.ended}")
        self.log.close()
        return self.ended

    def _signal(self, which: signal.Signals) -> None:
        try:
            os.killpg(self.process.pid, which)
        except (ProcessLookupError, PermissionError):
            pass

    def record(self) -> ServerLaunch:
        """What the bundle records of this server: ready time, how it ended, its log, the batch job."""
        job = scheduler_job()
        job.ready_s = round(self.ready_s, 3) if self.ready_s is not None else None
        job.ended = self.ended
        job.log = self.log.path.name
        return job

    def log_tail(self) -> list[str]:
        """The server's last lines, safe to print."""
        return [printable(line, 500) for line in self.log.tail]


def launch(command: str, env: Mapping[str, str], log_path: Path, secrets: list[str]) -> ServerProcess:
    """Start the server, logging to `log_path` with `secrets` redacted."""
    return ServerProcess(command, env, ServerLog(log_path, secrets))
