"""`runner sweep FILE --slurm`: each setup one Slurm job, followed until it ends, its bundle collected.

Jobs are submitted with Slurm's own `sbatch` (no library: the runner needs submit, look and
cancel, the three commands every Slurm site has, and submitit would add a pickled-function
layer the job does not need, since the job is this same CLI). Each job runs
`runner sweep FILE --setup ID` in the current folder, which every node must mount: the bundle,
journal, server log and the job's own log land in --out-dir, where this command reads them.
A job already queued for a setup (found by its name) is followed rather than submitted again.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from runner.bundle.terminal_text import printable
from runner.errors import OptionError
from runner.fleet.sweep import Outcome, SlurmSettings, setup_state
from runner.fleet.sweep_file import Setup

JOB_PREFIX = "speed-matrix-"
POLL_S = 1.0
TAIL_LINES = 20
# States after which a job runs no more (Slurm's job state codes).
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE", "SPECIAL_EXIT"}
# Where a field of a `scontrol show job --oneliner` line starts; its value runs to the next one
# (values such as the OS may hold spaces).
_FIELD = re.compile(r"(?:^|(?<= ))([A-Za-z][A-Za-z0-9_:/]*)=")
_COMMAND_S = 60.0


class Job(msgspec.Struct, kw_only=True):
    """One setup's job: its id, and what Slurm last said of it."""

    setup: Setup
    job_id: str
    state: str = "SUBMITTED"
    reason: str = ""
    node: str = ""
    exit_code: str = ""
    log: str = ""


def _slurm(*args: str, stdin: str | None = None) -> str:
    """Run a Slurm command; its output, or OptionError with its own message."""
    if shutil.which(args[0]) is None:
        raise OptionError(f"{args[0]} not found: --slurm needs Slurm's client commands on this machine's PATH")
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=_COMMAND_S)
    if done.returncode:
        raise OptionError(f"{args[0]} failed: {printable(done.stderr.strip() or done.stdout.strip(), 500)}")
    return done.stdout


def job_script(setup: Setup, file: Path, out_dir: Path, settings: SlurmSettings) -> str:
    """The batch script of one setup: its resources, its log beside its bundle, and the one command."""
    lines = ["#!/bin/sh", f"#SBATCH --job-name={JOB_PREFIX}{setup.id}",
             f"#SBATCH --output={out_dir.resolve()}/{setup.id}.slurm-%j.log", f"#SBATCH --chdir={Path.cwd()}"]
    if setup.gpus:
        lines.append(f"#SBATCH --gres=gpu:{setup.gpus}")
    for flag, value in (("--partition", settings.partition), ("--account", settings.account), ("--time", settings.time)):
        if value:
            lines.append(f"#SBATCH {flag}={value}")
    command = [sys.executable, "-m", "runner", "sweep", str(file.resolve()), "--out-dir", str(out_dir.resolve()),
               "--setup", setup.id]
    lines.append("exec " + shlex.join(command))
    return "\n".join(lines) + "\n"


def queued_jobs() -> dict[str, str]:
    """Job ids of this tool's jobs still queued or running, by setup id."""
    found = {}
    for line in _slurm("squeue", "--noheader", "--me", "--format=%i %j").splitlines():
        job_id, _, name = line.strip().partition(" ")
        if name.startswith(JOB_PREFIX):
            found[name.removeprefix(JOB_PREFIX)] = job_id
    return found


def submit(setup: Setup, file: Path, out_dir: Path, settings: SlurmSettings) -> str:
    """Submit one setup's job; its id."""
    output = _slurm("sbatch", "--parsable", *settings.extra, stdin=job_script(setup, file, out_dir, settings))
    return output.strip().split(";")[0]


def look(job: Job) -> None:
    """Update `job` from `scontrol show job`; a job Slurm no longer knows has ended."""
    try:
        text = _slurm("scontrol", "show", "job", "--oneliner", job.job_id)
    except OptionError:
        job.state = job.state if job.state in ENDED else "COMPLETED"
        return
    fields = scontrol_fields(text.strip())
    job.state = fields.get("JobState", job.state)
    job.reason = fields.get("Reason", "")
    job.node = fields.get("NodeList", "") if fields.get("NodeList") not in (None, "(null)") else ""
    job.exit_code = fields.get("ExitCode", "")
    job.log = fields.get("StdOut", job.log)


def scontrol_fields(line: str) -> dict[str, str]:
    """One `scontrol show … --oneliner` line as its fields."""
    marks = list(_FIELD.finditer(line))
    return {here.group(1): line[here.end(): after.start() if after else len(line)].strip()
            for here, after in zip(marks, [*marks[1:], None])}


def run_on_slurm(setups: list[Setup], file: Path, out_dir: Path, settings: SlurmSettings) -> list[Outcome]:
    """Submit what is missing, follow every job until it ends, and say what became of each setup."""
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes: dict[str, Outcome] = {}
    jobs: list[Job] = []
    queued = queued_jobs()
    for setup in setups:
        if setup_state(setup) == "finished":
            outcomes[setup.id] = Outcome(id=setup.id, result="skipped", reason="finished earlier")
        elif setup.id in queued:
            jobs.append(Job(setup=setup, job_id=queued[setup.id], state="QUEUED"))
            _say(f"{setup.id}: following job {queued[setup.id]}, queued earlier")
        else:
            jobs.append(Job(setup=setup, job_id=submit(setup, file, out_dir, settings)))
            _say(f"{setup.id}: submitted job {jobs[-1].job_id} ({setup.gpus} GPU{'s' if setup.gpus != 1 else ''})")
    started = time.monotonic()
    waiting = list(jobs)
    while waiting:
        for job in list(waiting):
            before = (job.state, job.reason, job.node)
            look(job)
            if (job.state, job.reason, job.node) != before:
                _say(f"{job.setup.id}: job {job.job_id} {_state_text(job)}")
            if job.state in ENDED:
                waiting.remove(job)
                outcomes[job.setup.id] = _outcome(job, time.monotonic() - started)
        if waiting:
            time.sleep(POLL_S)
    return [outcomes[s.id] for s in setups]


def _state_text(job: Job) -> str:
    """`PENDING (Resources)`, `RUNNING on node1`, `FAILED (exit code 1:0)`."""
    if job.state == "RUNNING":
        return f"RUNNING on {job.node}"
    if job.state in ENDED and job.state != "COMPLETED":
        return f"{job.state} (exit code {job.exit_code or '?'}; reason: {job.reason or 'none given'})"
    return job.state + (f" ({job.reason})" if job.reason and job.reason != "None" else "")


def _outcome(job: Job, seconds: float) -> Outcome:
    """A job that ended as a setup's outcome: done when its bundle is finished, else failed with Slurm's word."""
    if job.state == "COMPLETED" and setup_state(job.setup) == "finished":
        return Outcome(id=job.setup.id, result="done", reason=f"{job.setup.options.out} (Slurm job {job.job_id} on "
                       f"{job.node or 'a node'})", seconds=seconds)
    reason = f"Slurm job {job.job_id} {_state_text(job)}"
    return Outcome(id=job.setup.id, result="failed", reason=reason, details=_log_tail(job), seconds=seconds)


def _log_tail(job: Job) -> list[str]:
    """The last lines of the job's log, safe to print."""
    path = Path(job.log) if job.log else None
    if path is None or not path.is_file():
        return []
    with path.open("rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - 64 * 1024))
        lines = handle.read().decode("utf-8", "replace").splitlines()[-TAIL_LINES:]
    return [f"the job's last lines ({path}):", *(f"  {printable(line, 500)}" for line in lines)]


def _say(text: str) -> None:
    print(printable(text), file=sys.stderr, flush=True)
