"""A real one-node Slurm (munged, slurmctld, slurmd) started by a test in a folder of its own.

`runner sweep --slurm` talks to Slurm only through its commands (sbatch, squeue, scontrol), so its
tests run those commands against real daemons rather than a fake. Every path, both ports and the
cluster name are the run's own, so parallel runs and daemons left by others do not collide.

    with slurm_cluster(tmp_path, gpus=4) as cluster:
        subprocess.run(["sbatch", "--wrap", "true"], env={**os.environ, **cluster.env})
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runner.fleet.slurm import scontrol_fields

# slurmd forks each job's slurmstepd through a child that exits at once, so slurmstepd is orphaned
# and, where init is slow to reap, lingers as a zombie. slurmd runs under this wrapper instead: a
# child subreaper (prctl PR_SET_CHILD_SUBREAPER) that adopts and reaps them, passes SIGTERM and
# SIGINT on to slurmd, and once slurmd has exited kills and reaps what is left under it.
REAPER = """
import ctypes, os, signal, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
child = os.fork()
if child == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
def forward(number, frame):
    try:
        os.kill(child, number)
    except ProcessLookupError:
        pass

for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, forward)

def kill_children():
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1] == str(os.getpid()):
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, IndexError):
            pass

code = None
while True:
    try:
        pid, status = os.wait() if code is None else os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == child:
        code = os.waitstatus_to_exitcode(status)
    if code is not None:
        kill_children()
        if pid == 0:
            time.sleep(0.05)
sys.exit(code)
"""

# Daemons live in /usr/sbin, which a non-login root shell may lack on PATH.
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "sinfo", "scancel")
INSTALL_HINT = "bash scripts/install-slurm.sh (Debian's slurmctld, slurmd, slurm-client and munge)"
# Set in every daemon's and job's environment: the processes to end on exit are found by it.
MARKER = "SPEED_MATRIX_SLURM_CLUSTER"
# munged's and slurmd's unix sockets live in the run folder and a socket path holds 107 bytes.
MAX_FOLDER_LENGTH = 60
START_TIMEOUT_S = 45.0
STOP_TIMEOUT_S = 10.0


@dataclass
class Cluster:
    """A started cluster: its name, node, folder and the environment its client commands need."""

    name: str
    node: str
    gpus: int
    cpus: int
    conf_dir: Path
    env: dict[str, str]
    ports: tuple[int, int]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def conf(self) -> Path:
        """slurm.conf, the file SLURM_CONF names."""
        return self.conf_dir / "slurm.conf"

    def log_path(self, daemon: str) -> Path:
        """Where `daemon` (munged, slurmctld or slurmd) logs; its stdout and stderr go beside it."""
        if daemon not in DAEMONS:
            raise ValueError(f"no daemon {daemon!r}: one of {', '.join(DAEMONS)}")
        return self.conf_dir / "log" / f"{daemon}.log"

    def log(self, daemon: str) -> str:
        """The daemon's log and what it printed, for a test's failure message."""
        parts = []
        for path in (self.log_path(daemon), self.log_path(daemon).with_suffix(".out")):
            if path.is_file():
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
        return "".join(parts)

    def log_tails(self, lines: int = 30) -> str:
        """The last `lines` lines of each daemon's log, labelled, to explain a failure."""
        return "\n".join(f"--- {daemon} ---\n" + "\n".join(self.log(daemon).splitlines()[-lines:]) for daemon in DAEMONS)

    def run(self, *args: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Runs a Slurm client command against this cluster; fails with its output and the logs if `check` and it fails."""
        done = subprocess.run(list(args), env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}\n{self.log_tails()}")
        return done

    def sbatch(self, *args: str) -> str:
        """Submits a batch job (`sbatch --parsable ARGS`) and returns its id."""
        return self.run("sbatch", "--parsable", *args).stdout.strip().split(";")[0]

    def show_job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job -o ID` as a dict of its Key=Value fields (values may hold spaces, e.g. Command)."""
        return parse_scontrol_line(self.run("scontrol", "show", "job", "-o", job_id).stdout.strip())

    def wait_job(self, job_id: str, states: frozenset[str] | set[str], timeout: float = 30.0) -> dict[str, str]:
        """Polls the job until its JobState is one of `states`; fails with its last record and the logs if not in time."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.show_job(job_id)
            if job.get("JobState") in states:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} still {job.get('JobState')} after {timeout:.0f} s, wanted {sorted(states)}: {job}\n{self.log_tails()}")
            time.sleep(0.25)




def parse_scontrol_line(line: str) -> dict[str, str]:
    """One `scontrol show ... -o` line as a dict, read as the runner reads it (values may hold spaces)."""
    return scontrol_fields(line)


def require_slurm() -> None:
    """Skips the test where Slurm or munge is not installed; fails it in CI, where `make test` installs them."""
    missing = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name, path=SBIN_PATH) is None]
    if not missing:
        return
    message = f"Slurm is not installed (no {', '.join(missing)}): run {INSTALL_HINT}"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free right now (the kernel's picks, held together so they differ)."""
    held = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("", 0))
            held.append(sock)
        return [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def _slurm_conf(folder: Path, name: str, node: str, cpus: int, gpus: int, ports: tuple[int, int]) -> str:
    """The cluster's slurm.conf: every path inside `folder`, no cgroups, no accounting, quick timeouts."""
    return f"""\
# Written by tests/fleet/slurm_cluster.py for one test cluster; every path is in its folder.
ClusterName={name}
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder}/munge/munge.socket
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/run/slurmctld.pid
SlurmdPidFile={folder}/run/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig={folder}/plugstack.conf
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1
# The node is what this file says, whatever the machine has (more CPUs than cores, no real GPUs).
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
# Finished jobs stay visible to scontrol show job for an hour.
MinJobAge=3600
OverTimeLimit=0
KillWait=2
InactiveLimit=0
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=10
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1024 Gres=gpu:{gpus} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def _gres_conf(folder: Path, node: str, gpus: int) -> str:
    """gres.conf backing each GPU with a file: with a bare Count slurmd finds no GPU and the node goes INVAL."""
    return f"NodeName={node} Name=gpu File={folder}/gpu/gpu[0-{gpus - 1}]\n" if gpus > 1 else f"NodeName={node} Name=gpu File={folder}/gpu/gpu0\n"


def _placeholder_gpu(path: Path) -> None:
    """A stand-in GPU device: a character device like /dev/null (1:3), else an empty file.

    slurmd counts either, but sets CUDA_VISIBLE_DEVICES in a job only for a real character or block
    device ("not a valid character or block device" in its log otherwise). Nothing opens it.
    """
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        path.touch()


def processes_marked(name: str) -> list[int]:
    """Pids of the processes whose environment carries this cluster's marker: its daemons, their steps and jobs."""
    wanted = f"{MARKER}={name}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not ended in time; reaps it either way."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


def _kill_marked(name: str) -> list[int]:
    """SIGKILLs what is left of the cluster (job steps, their children) and waits until it is gone; returns what it found."""
    leftovers = processes_marked(name)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while (alive := processes_marked(name)) and time.monotonic() < deadline:
        for pid in alive:  # reap any that were our own children
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return leftovers


@contextlib.contextmanager
def slurm_cluster(tmp_path: Path, gpus: int = 4, cpus: int | None = None) -> Iterator[Cluster]:
    """Starts munged, slurmctld and slurmd on this machine, all files under `tmp_path`, and waits until the node is idle.

    The node has `gpus` GPUs (placeholder device files) and `cpus` CPUs (default: one per GPU, at
    least 2), so that GPUs, not CPUs, decide how many jobs run at once. Where `tmp_path` is too long
    for a unix socket path, the cluster lives in a folder of its own under the system's temp folder
    instead (`cluster.conf_dir`), removed on exit. On exit every job is cancelled and every daemon
    and job process is ended. Skips (fails in CI) where Slurm is not installed.
    """
    require_slurm()
    if gpus < 1:
        raise ValueError("a cluster needs at least one GPU")
    cpus = cpus or max(gpus, 2)
    own_folder = None
    folder = Path(tmp_path).resolve()
    if len(str(folder)) > MAX_FOLDER_LENGTH:
        own_folder = folder = Path(tempfile.mkdtemp(prefix="slurm-"))
    try:
        with _started(folder, gpus, cpus) as cluster:
            yield cluster
    finally:
        if own_folder is not None:
            shutil.rmtree(own_folder, ignore_errors=True)


@contextlib.contextmanager
def _started(folder: Path, gpus: int, cpus: int) -> Iterator[Cluster]:
    """Writes the cluster's files into `folder`, starts its daemons, yields it and stops them all."""
    name = f"sm{secrets.token_hex(4)}"
    node = socket.gethostname().split(".")[0]
    ports = _free_ports(2)
    for sub in ("munge", "state", "spool", "run", "log", "gpu"):
        (folder / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    for index in range(gpus):
        _placeholder_gpu(folder / "gpu" / f"gpu{index}")
    key = folder / "munge" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    (folder / "slurm.conf").write_text(_slurm_conf(folder, name, node, cpus, gpus, (ports[0], ports[1])), encoding="utf-8")
    (folder / "gres.conf").write_text(_gres_conf(folder, node, gpus), encoding="utf-8")
    (folder / "plugstack.conf").write_text("", encoding="utf-8")

    env = {"SLURM_CONF": str(folder / "slurm.conf"), MARKER: name}
    cluster = Cluster(name=name, node=node, gpus=gpus, cpus=cpus, conf_dir=folder, env=env, ports=(ports[0], ports[1]))
    daemon_env = {**os.environ, **env, "PATH": SBIN_PATH}
    commands = {
        "munged": [
            "munged", "--foreground", "--force",
            f"--socket={folder}/munge/munge.socket", f"--key-file={key}",
            f"--pid-file={folder}/run/munged.pid", f"--log-file={cluster.log_path('munged')}",
            f"--seed-file={folder}/munge/munged.seed",
        ],
        "slurmctld": ["slurmctld", "-D", "-c", "-f", str(cluster.conf)],
        "slurmd": [sys.executable, "-c", REAPER, "slurmd", "-D", "-f", str(cluster.conf), "-N", node],
    }  # fmt: skip
    try:
        for daemon, command in commands.items():
            with open(cluster.log_path(daemon).with_suffix(".out"), "wb") as out:
                cluster.processes[daemon] = subprocess.Popen(
                    command, env=daemon_env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            if daemon == "munged":
                _wait_for(cluster, lambda: (folder / "munge" / "munge.socket").exists(), "munged's socket")
        _wait_for(cluster, lambda: _node_state(cluster) == "idle", f"node {node} idle in sinfo")
        yield cluster
    finally:
        _shutdown(cluster)


def _node_state(cluster: Cluster) -> str:
    """The node's compact state in sinfo (idle, mix, alloc, down*, inval…), or '' while slurmctld does not answer."""
    try:
        done = cluster.run("sinfo", "-h", "-N", "-o", "%t", check=False, timeout=10)
    except subprocess.TimeoutExpired:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _wait_for(cluster: Cluster, ready: Callable[[], bool], what: str) -> None:
    """Polls `ready()` until true; fails with the daemons' log tails when a daemon exits or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        dead = [f"{daemon} exited {process.returncode}" for daemon, process in cluster.processes.items() if process.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = ", ".join(dead) or f"not within {START_TIMEOUT_S:.0f} s"
            raise RuntimeError(f"Slurm test cluster {cluster.name}: no {what} ({why}; node state {_node_state(cluster)!r})\n{cluster.log_tails()}")
        time.sleep(0.2)


def _shutdown(cluster: Cluster) -> None:
    """Cancels every job, stops slurmd, slurmctld and munged in that order, then kills whatever still carries the marker."""
    if cluster.processes.get("slurmctld") and cluster.processes["slurmctld"].poll() is None:
        with contextlib.suppress(Exception):
            jobs = cluster.run("squeue", "-h", "-o", "%i", check=False, timeout=10).stdout.split()
            if jobs:
                cluster.run("scancel", *jobs, check=False, timeout=10)
    for daemon in reversed(DAEMONS):
        if daemon in cluster.processes:
            _stop(cluster.processes[daemon])
    _kill_marked(cluster.name)
