"""The real one-node Slurm that `runner sweep --slurm` is tested against: it schedules by GPU, reports
each end state the sweep reads (COMPLETED, FAILED, CANCELLED, TIMEOUT) through `scontrol show job -o`,
and leaves no process and no file behind when it stops."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet.slurm_cluster import MARKER, Cluster, parse_scontrol_line, processes_marked, slurm_cluster

# Where Debian's packages keep their own state: a test cluster must write nothing there.
PACKAGE_PLACES = ("/etc/slurm", "/var/lib/slurm", "/var/log/slurm", "/var/spool/slurmd", "/var/spool/slurmctld", "/run/slurm", "/run/slurmctld", "/run/slurmd", "/var/lib/munge", "/var/log/munge", "/run/munge", "/etc/munge")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster with four GPUs for the module: it starts in a second or two, and the tests take turns on it."""
    with slurm_cluster(tmp_path_factory.mktemp("slurm"), gpus=4) as started:
        yield started


@pytest.fixture(scope="module")
def timeout_job(cluster: Cluster) -> str:
    """A running job whose end time is moved to two seconds from now, started before the other tests.

    Slurm's time limits are whole minutes and slurmctld checks them only every 30 s, so the job
    asks for no GPU and runs out its limit while the other tests use the GPUs.
    """
    job = cluster.sbatch("--time=1", f"--chdir={cluster.conf_dir}", "--output=timeout-%j.out", "--wrap", "sleep 300")
    cluster.wait_job(job, {"RUNNING"})
    end = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 2))
    cluster.run("scontrol", "update", f"JobId={job}", f"EndTime={end}")
    return job


def _queue(cluster: Cluster, jobs: list[str]) -> dict[str, tuple[str, str]]:
    """squeue's state and reason of each of `jobs` still in the queue."""
    lines = cluster.run("squeue", "-h", "-j", ",".join(jobs), "-o", "%i %T %r").stdout.splitlines()
    return {job: (state, reason) for job, state, reason in (line.split(maxsplit=2) for line in lines)}


def test_the_node_has_its_gpus_and_clients_find_the_cluster(cluster: Cluster, timeout_job: str) -> None:
    node = parse_scontrol_line(cluster.run("scontrol", "show", "node", "-o", cluster.node).stdout.strip())
    assert node["Gres"] == "gpu:4" and node["NodeName"] == cluster.node
    assert node["State"] in {"IDLE", "MIXED"}, node  # MIXED once the timeout job runs
    assert cluster.env["SLURM_CONF"] == str(cluster.conf_dir / "slurm.conf")
    config = dict(map(str.strip, line.split("=", 1)) for line in cluster.run("scontrol", "show", "config").stdout.splitlines() if " = " in line)
    assert (config["ClusterName"], config["SlurmctldPort"]) == (cluster.name, str(cluster.ports[0]))


def test_gpu_jobs_wait_for_resources_then_complete(cluster: Cluster, timeout_job: str, tmp_path: Path) -> None:
    script = "sleep 8; echo $SLURM_JOB_ID $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES > out-$SLURM_JOB_ID"
    jobs = [cluster.sbatch("--gres=gpu:2", f"--chdir={tmp_path}", "--output=slurm-%j.out", "--wrap", script) for _ in range(3)]

    # Jobs start within a second or two; the waiting one's reason reads Priority until a scheduler pass says Resources.
    deadline = time.monotonic() + 10
    while sorted((queue := _queue(cluster, jobs)).values()) != [("PENDING", "Resources"), ("RUNNING", "None"), ("RUNNING", "None")]:
        assert time.monotonic() < deadline, f"wanted two running and one pending for resources: {queue}\n{cluster.log_tails()}"
        time.sleep(0.2)
    pending = next(job for job, (state, _) in queue.items() if state == "PENDING")
    shown = cluster.show_job(pending)
    assert (shown["JobState"], shown["Reason"], shown["NodeList"]) == ("PENDING", "Resources", "")

    finished = {job: cluster.wait_job(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, timeout=30) for job in jobs}
    for job, shown in finished.items():
        assert (shown["JobState"], shown["ExitCode"], shown["NodeList"]) == ("COMPLETED", "0:0", cluster.node), shown
        assert shown["StdOut"] == str(tmp_path / f"slurm-{job}.out") and Path(shown["StdOut"]).is_file()
    seen = {job: (tmp_path / f"out-{job}").read_text().split() for job in jobs}
    assert all(words[:2] == [job, cluster.node] for job, words in seen.items()), seen
    first_two = [job for job in jobs if job != pending]
    assert {seen[first_two[0]][2], seen[first_two[1]][2]} == {"0,1", "2,3"}, "the two jobs that ran together had different GPUs"
    assert finished[pending]["StartTime"] >= min(finished[job]["EndTime"] for job in first_two)


def test_a_job_that_exits_3_fails_with_exit_code_3(cluster: Cluster, tmp_path: Path) -> None:
    job = cluster.sbatch(f"--chdir={tmp_path}", "--wrap", "exit 3")
    shown = cluster.wait_job(job, {"COMPLETED", "FAILED"})
    assert (shown["JobState"], shown["ExitCode"], shown["Reason"]) == ("FAILED", "3:0", "NonZeroExitCode")


def test_scancel_cancels_a_running_job(cluster: Cluster, tmp_path: Path) -> None:
    job = cluster.sbatch(f"--chdir={tmp_path}", "--wrap", "sleep 300")
    cluster.wait_job(job, {"RUNNING"})
    cluster.run("scancel", job)
    shown = cluster.wait_job(job, {"CANCELLED", "COMPLETED", "FAILED"})
    assert (shown["JobState"], shown["ExitCode"]) == ("CANCELLED", "0:15")


def test_a_job_past_its_time_limit_times_out(cluster: Cluster, timeout_job: str) -> None:
    shown = cluster.wait_job(timeout_job, {"TIMEOUT", "COMPLETED", "FAILED", "CANCELLED"}, timeout=60)
    assert (shown["JobState"], shown["Reason"], shown["TimeLimit"]) == ("TIMEOUT", "TimeLimit", "00:01:00")
    assert "DUE TO TIME LIMIT" in Path(shown["StdOut"]).read_text()


def _package_places() -> dict[str, list[tuple[str, int]]]:
    """Names and mtimes under the packages' own folders, to show that a test cluster wrote nothing there."""
    return {place: sorted((str(path), path.lstat().st_mtime_ns) for path in Path(place).rglob("*")) for place in PACKAGE_PLACES if Path(place).is_dir()}


def _port_is_free(port: int) -> bool:
    """Whether nothing listens on `port` any more (a closed listener's TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def test_exit_ends_every_daemon_and_job_and_writes_only_its_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp_path = tmp_path_factory.mktemp("stop")
    before = _package_places()
    with slurm_cluster(tmp_path, gpus=1) as second:
        assert second.conf_dir == tmp_path
        job = second.sbatch(f"--chdir={tmp_path}", "--gres=gpu:1", "--wrap", "touch written-by-job; sleep 300")
        second.wait_job(job, {"RUNNING"})
        assert processes_marked(second.name), "the daemons and the job carry the marker"
        daemons = dict(second.processes)
    assert all(process.returncode is not None for process in daemons.values())
    assert processes_marked(second.name) == []
    ps = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True, check=True).stdout
    assert [line for line in ps.splitlines() if str(tmp_path) in line or second.name in line] == []
    assert all(_port_is_free(port) for port in second.ports)
    assert (tmp_path / "written-by-job").is_file()
    assert _package_places() == before
    assert MARKER not in os.environ
