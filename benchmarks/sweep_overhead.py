"""Sweep overhead: the time `runner sweep` adds per setup beyond the server's start-up and the measuring.

Side by side in the same minutes, for the same plan (1K × 1, 2 at --duration s, 16 tokens out):

- peer: `runner measure` against a simulator that is already running (what a hand-written
  shell loop around a running server pays per setup);
- sweep: `runner sweep` of N setups, each starting and stopping its own simulator.

Per setup, the sweep's overhead is its wall time less the server's own start-up (the bundle's
launch.ready_s) and the decode windows (their measured_s); it is also set beside the peer's. With --slurm (SLURM_CONF set, or the test cluster of
tests/fleet/slurm_cluster.py started for the run), the same sweep runs as Slurm jobs, and the
scheduler's queueing (each job's StartTime − SubmitTime) is left out as well.

Targets: ≤ 3 s per setup locally, ≤ 10 s per setup on Slurm beyond the queueing.
Run: python3 benchmarks/sweep_overhead.py [--setups 3] [--duration 0.5] [--slurm]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner.simulator import SimConfig, running_simulator  # noqa: E402

SIMULATOR = f"{sys.executable} -m runner simulate --serve-only --port {{port}}"


def plan(duration: float) -> list[str]:
    """The plan both sides measure, as command-line options."""
    return ["--contexts", "1K", "--prefill-contexts", "1K", "--concurrency", "1,2", "--duration", str(duration),
            "--max-output", "16"]


def peer_seconds(folder: Path, count: int, duration: float) -> list[float]:
    """`runner measure` against one running simulator, `count` times; the wall time of each."""
    times = []
    with running_simulator(SimConfig()) as server:
        for index in range(count):
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "runner", "measure", "--base-url", server.base_url,
                            "--out", str(folder / f"peer-{index}.json"), *plan(duration)],
                           check=True, capture_output=True)
            times.append(time.monotonic() - started)
    return times


def sweep_file(folder: Path, count: int, duration: float) -> Path:
    """A sweep of `count` simulator setups with the peer's plan."""
    lines = ["[defaults]", 'contexts = "1K"', 'prefill_contexts = "1K"', 'concurrency = "1,2"',
             f"duration = {duration}", "max_output = 16"]
    for index in range(count):
        lines += ["", "[[setup]]", f'id = "sim-{index}"', f'serve = "{SIMULATOR}"', "gpus = 1"]
    path = folder / "sweep.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def sweep_seconds(folder: Path, count: int, duration: float, slurm: bool) -> tuple[float, list[dict]]:
    """Run the sweep; its wall time and the bundles it wrote."""
    runs = folder / ("slurm-runs" if slurm else "runs")
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "runner", "sweep", str(sweep_file(folder, count, duration)),
                    "--out-dir", str(runs), *(["--slurm"] if slurm else [])], check=True, capture_output=True,
                   cwd=folder)
    return time.monotonic() - started, [json.loads(path.read_text()) for path in sorted(runs.glob("sim-*.json"))]


def job_times(job_id: str) -> dict[str, float]:
    """A Slurm job's submit, start and end times (seconds since the epoch), from scontrol."""
    import datetime as dt
    import re

    text = subprocess.run(["scontrol", "show", "job", "--oneliner", job_id], capture_output=True, text=True).stdout
    fields = dict(re.findall(r"(\w+)=(\S*)", text))
    return {name: dt.datetime.strptime(fields[name + "Time"], "%Y-%m-%dT%H:%M:%S").timestamp()
            for name in ("Submit", "Start", "End")}


def main() -> None:
    """Measure both sides and print the per-setup figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setups", type=int, default=3)
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--slurm", action="store_true", help="also run the sweep as Slurm jobs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        peer = peer_seconds(folder, args.setups, args.duration)
        wall, bundles = sweep_seconds(folder, args.setups, args.duration, slurm=False)
        ready = sum(b["launch"]["ready_s"] for b in bundles)
        per_setup = wall / args.setups
        overhead = per_setup - statistics.median(peer) - ready / args.setups
        print(f"peer (runner measure, running server): median {statistics.median(peer):.2f} s per setup "
              f"({', '.join(f'{t:.2f}' for t in peer)})")
        print(f"runner sweep: {wall:.2f} s for {args.setups} setups = {per_setup:.2f} s each; "
              f"server start-up {ready / args.setups:.2f} s each")
        windows = sum(c["measured_s"] or 0 for b in bundles for c in b["decode"]) / args.setups
        print(f"beyond the server's start-up and the measurement windows ({windows:.2f} s each): "
              f"{per_setup - ready / args.setups - windows:.2f} s per setup (target ≤ 3 s; it includes the "
              "prefill point, each cell's warm-up and the server's stop)")
        print(f"against the peer (which pays a Python start per setup): {overhead:+.2f} s per setup")
        if args.slurm:
            _slurm(folder, args, peer)


def _slurm(folder: Path, args: argparse.Namespace, peer: list[float]) -> None:
    """The same sweep as Slurm jobs, on the cluster SLURM_CONF names or a test cluster started here.

    Per job, the overhead is its run time (EndTime − StartTime) less the peer's measuring and the
    server's start-up; the command's own share is its submitting before the first job was
    queued and its noticing after the last one ended, spread over the setups.
    """
    import contextlib
    import os

    cluster: contextlib.AbstractContextManager = contextlib.nullcontext()
    if not os.environ.get("SLURM_CONF"):
        from tests.fleet.slurm_cluster import slurm_cluster

        cluster = slurm_cluster(folder / "cluster")
    with cluster as started:
        if started is not None:
            os.environ.update(started.env)
        began = time.time()
        wall, bundles = sweep_seconds(folder, args.setups, args.duration, slurm=True)
        ended = began + wall
        times = [job_times(b["launch"]["job_id"]) for b in bundles]
    in_job = [t["End"] - t["Start"] - statistics.median(peer) - b["launch"]["ready_s"] for t, b in zip(times, bundles)]
    queued = [t["Start"] - t["Submit"] for t in times]
    command = (min(t["Submit"] for t in times) - began) + (ended - max(t["End"] for t in times))
    print(f"runner sweep --slurm: {wall:.2f} s for {args.setups} setups; queueing {', '.join(f'{q:.0f}' for q in queued)} s")
    print(f"per job beyond measuring and start-up: median {statistics.median(in_job):.2f} s; the command's "
          f"submitting and noticing: {command:.2f} s in all (scontrol times are whole seconds)")
    print(f"Slurm overhead per setup beyond queueing: {statistics.median(in_job) + command / args.setups:.2f} s "
          "(target ≤ 10 s)")


if __name__ == "__main__":
    main()
