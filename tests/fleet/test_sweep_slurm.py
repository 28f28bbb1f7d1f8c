"""`runner sweep FILE --slurm` against a real Slurm on this machine: one job per setup, GPUs scheduled
by Slurm, bundles collected, failures reported with Slurm's words, nothing submitted twice."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from runner.bundle.schema import decode_bundle
from runner.cli import main
from runner.fleet.slurm import scontrol_fields
from tests.engines.llama_server import llama_server_binary, make_tiny_gguf
from tests.fleet.fleet_builders import BROKEN, SIMULATOR, listening, no_new_servers, port_of, sweep_file
from tests.fleet.slurm_cluster import Cluster, slurm_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One node with four GPUs for the module."""
    with slurm_cluster(tmp_path_factory.mktemp("slurm"), gpus=4) as started:
        yield started


@pytest.fixture(autouse=True)
def slurm_env(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Slurm's clients find the test cluster; no server outlives a test."""
    for name, value in cluster.env.items():
        monkeypatch.setenv(name, value)
    with no_new_servers():
        yield


def sweep(file: Path, runs: Path, *extra: str) -> Result:
    """`runner sweep FILE --slurm` in-process."""
    return CliRunner().invoke(main, ["sweep", str(file), "--out-dir", str(runs), "--slurm", *extra])


def job_record(cluster: Cluster, job_id: str) -> dict[str, str]:
    """Slurm's record of a job."""
    return scontrol_fields(cluster.run("scontrol", "show", "job", "--oneliner", job_id).stdout.strip())


def _time(stamp: str) -> dt.datetime:
    return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S")


@pytest.mark.llama
def test_a_sweep_on_slurm_two_jobs_side_by_side_a_third_waits_and_a_failure_is_reported(
        cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("sweep")
    model = make_tiny_gguf(folder / "tiny.gguf")
    binary = llama_server_binary()

    def llama(slots: int) -> str:
        return f"{binary} -m {model} --host 127.0.0.1 --port {{port}} -np {slots} -c {2048 * slots} --metrics -t 1 --no-warmup"

    file = sweep_file(folder / "sweep.toml", [
        {"id": "llama-2-slots", "serve": llama(2), "gpus": 2},
        {"id": "llama-4-slots", "serve": llama(4), "gpus": 2, "concurrency": "1,4"},
        {"id": "broken", "serve": BROKEN, "gpus": 2},
    ])
    runs = folder / "runs"
    result = sweep(file, runs)
    assert result.exit_code == 1, result.output
    text = result.output
    summary = text[text.index(f"sweep {file}:"):].splitlines()
    assert summary[-1] == "2 done, 1 failed, 0 skipped", text
    broken = next(line for line in summary if line.split()[:2] == ["broken", "failed"])
    assert "FAILED (exit code 1:0; reason: NonZeroExitCode)" in broken
    assert any("exited with status 4 before it became ready" in line for line in summary)
    assert any("fatal: no such model: missing/model" in line for line in summary)

    jobs = {}
    for run_id in ("llama-2-slots", "llama-4-slots"):
        bundle = decode_bundle((runs / f"{run_id}.json").read_bytes())
        launch = bundle.launch
        assert launch.scheduler == "slurm" and launch.node == cluster.node and launch.job_id
        assert (runs / f"{run_id}.server.log").is_file() and (runs / f"{run_id}.slurm-{launch.job_id}.log").is_file()
        assert "{port}" not in (bundle.launch_command or "") and len(bundle.decode) == 2
        assert all(cell.status != "Failed" for cell in bundle.decode)
        jobs[run_id] = job_record(cluster, launch.job_id)
    broken_job = broken.split("Slurm job ")[1].split()[0]
    jobs["broken"] = job_record(cluster, broken_job)
    assert all(job["TresPerNode"] == "gres:gpu:2" for job in jobs.values())
    first, second, third = jobs["llama-2-slots"], jobs["llama-4-slots"], jobs["broken"]
    # The first two ran at the same time; the third started only once one of them had ended.
    assert _time(first["StartTime"]) < _time(second["EndTime"]) and _time(second["StartTime"]) < _time(first["EndTime"])
    assert _time(third["StartTime"]) >= min(_time(first["EndTime"]), _time(second["EndTime"]))
    assert f"broken: job {broken_job} PENDING" in text

    again = sweep(file, runs)
    assert again.exit_code == 1, again.output
    assert again.output.count("submitted job") == 1 and "broken: submitted job" in again.output
    assert again.output.splitlines()[-1] == "0 done, 1 failed, 2 skipped"


def test_a_queued_job_is_followed_not_submitted_again(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("queued")
    file = sweep_file(folder / "sweep.toml", [{"id": "sim-queued", "serve": SIMULATOR, "gpus": 4}])
    blocker = cluster.sbatch("--gres=gpu:4", f"--chdir={folder}", "--output=blocker.out", "--wrap", "sleep 4")
    queued = cluster.sbatch("--gres=gpu:4", f"--chdir={folder}", "--job-name=speed-matrix-sim-queued",
                            f"--output={folder}/runs/sim-queued.slurm-%j.log",
                            "--wrap", f"{sys.executable} -m runner sweep {file} --out-dir {folder / 'runs'} --setup sim-queued")
    (folder / "runs").mkdir()
    result = sweep(file, folder / "runs")
    assert result.exit_code == 0, result.output
    assert f"sim-queued: following job {queued}, queued earlier" in result.output and "submitted job" not in result.output
    bundle = decode_bundle((folder / "runs" / "sim-queued.json").read_bytes())
    assert bundle.launch.job_id == queued and not listening(port_of(bundle.launch_command))
    assert job_record(cluster, blocker)["JobState"] == "COMPLETED"


def test_a_cancelled_job_is_reported_with_slurms_state(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> None:
    import threading
    import time

    folder = tmp_path_factory.mktemp("cancel")
    file = sweep_file(folder / "sweep.toml", [{"id": "sim-cancelled", "serve": SIMULATOR, "gpus": 1,
                                              "concurrency": "1,2,3,4,5,6,7,8", "duration": 2}])

    def cancel_when_running() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            jobs = cluster.run("squeue", "-h", "-n", "speed-matrix-sim-cancelled", "-t", "RUNNING", "-o", "%i").stdout.split()
            if jobs and (folder / "runs" / "sim-cancelled.json").exists():
                cluster.run("scancel", jobs[0])
                return
            time.sleep(0.3)

    canceller = threading.Thread(target=cancel_when_running)
    canceller.start()
    result = sweep(file, folder / "runs")
    canceller.join()
    assert result.exit_code == 1, result.output
    summary = result.output[result.output.index(f"sweep {file}:"):].splitlines()
    line = next(line for line in summary if line.strip().startswith("sim-cancelled"))
    assert "failed" in line and "CANCELLED" in line
    bundle = decode_bundle((folder / "runs" / "sim-cancelled.json").read_bytes())
    # Slurm signals every process of the job: the runner stops the server, or Slurm's own SIGTERM gets there first.
    assert bundle.launch.ended in ("stopped by the runner (SIGTERM)", "was killed by SIGTERM on its own")
