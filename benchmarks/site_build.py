"""Site build at N runs: run on demand (`python3 benchmarks/site_build.py --runs 10000`), not a test.

Synthesizes runs from the committed bundles in content/runs (ids, ~30 models, 8 GPUs, numbers
scaled by seeded random factors), builds them with `python -m sitegen build` in a fresh process,
and prints the figures of docs/scale.md's table against its targets: cold build (wall and CPU),
peak memory (the proportional set size of the build and its workers, summed), index.html,
the compare picker, pages written and disk used, and the incremental build after one bundle
changes (the first rebuild after a cold build, which has no kept stage yet, apart from the median
of the next three). `--code DIR` builds with another checkout's sitegen (for before/after figures),
its bytecode compiled first, as an install leaves it (`make install` does so for the editable one).
`--work DIR` keeps the synthesized content and the site there, so a second run skips making
10,000 bundles; with `--repeat 0` it also skips the cold builds and measures rebuilds of the site
already there (brought up to date by one untimed build first).
The machine is shared: figures are medians and still noisy.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import math
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from disk import Trash, settle, warm  # this folder's: a script's folder is on its path

ROOT = Path(__file__).resolve().parent.parent

FAMILIES = ("Ling-3.0-flash", "Inkling", "MiMo-V2.6-Flash", "Qwen3.5-122B-A10B", "Llama-4.2-Maverick", "Mistral-Large-3")
QUANTIZATIONS = ("fp4", "fp8", "bf16", "nvfp4", "awq")
GPUS = (
    ("H200 NVL", 141.0), ("H200 SXM", 141.0), ("H100 SXM", 80.0), ("B200", 180.0),
    ("MI300X", 192.0), ("RTX PRO 6000", 96.0), ("L40S", 48.0), ("A100 SXM", 80.0),
)
FASTER = ("total_tok_s", "per_request_tok_s", "prompt_tok_s")  # scaled by the run's speed factor
SLOWER = ("ttft_ms", "tbt_ms")  # scaled by its inverse
COUNTS = ("output_tokens", "completed")  # scaled together: each request still within the run's max output
# How often the build's memory is sampled: reading smaps_rollup walks each process's page tables, so
# sampling much more often takes a noticeable share of a core from the build it measures.
SAMPLE_S = 0.5
# docs/scale.md's targets at 10,000 runs (the incremental one at any count).
# The targets at 10,000 runs, and where they differ at 100,000: the Pages artifact (a tar of the site)
# within GitHub Pages' 1 GB at 10,000 runs; the site on disk within 6 GB at 100,000.
TARGETS = {"cold_s": 25.0, "peak_mb": 500.0, "index_kb": 250.0, "incremental_s": 1.0, "artifact_gb": 1.0}
TARGETS_100K = {**TARGETS, "cold_s": 200.0, "peak_mb": 1000.0, "artifact_gb": None, "disk_gb": 6.0}


def slug(text: str) -> str:
    """A run-id-safe slug: lowercase letters, digits and hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def scale_figures(point: dict, factor: float, rng: random.Random) -> None:
    """Scale one prefill point's or decode cell's figures in place, with a little per-cell noise."""
    noisy = factor * rng.uniform(0.95, 1.05)
    for key in FASTER + SLOWER + COUNTS:
        value = point.get(key)
        if value is None:
            continue
        scaled = value * noisy if key in FASTER + COUNTS else value / noisy
        point[key] = round(scaled) if key in COUNTS else round(scaled, 1)


def synthesize(base: dict, index: int, rng: random.Random) -> dict:
    """One synthetic run from a committed bundle: new id, model, GPU, date and scaled numbers."""
    bundle = copy.deepcopy(base)
    model = f"{FAMILIES[index % len(FAMILIES)]}-{QUANTIZATIONS[index // len(FAMILIES) % len(QUANTIZATIONS)]}"
    gpu, vram = rng.choice(GPUS)
    count = rng.choice((1, 2, 4, 8))
    measured = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=rng.randrange(365 * 24 * 60))  # a past year: the loader refuses future dates
    bundle.update(id=slug(f"{model}-{gpu}-x{count}-{index:05d}"), model=model, measured_at=measured.isoformat().replace("+00:00", "Z"))
    bundle["hardware"].update(gpu=gpu, vram_per_gpu_gb=vram, gpu_count=count)
    factor = rng.uniform(0.3, 3.0)
    for point in bundle["prefill"] + bundle["decode"]:
        scale_figures(point, factor, rng)
    # Scaled windows count more tokens for the requests still running at their end: the max output
    # grows with them, so that a synthetic run stays consistent, as the sites it stands for are.
    if most := bundle["run"].get("max_output_tokens"):
        bundle["run"]["max_output_tokens"] = max(most, math.ceil(most * factor * 1.05))
    return bundle


def make_content(folder: Path, runs: int, seed: int) -> list[Path]:
    """A content folder with `runs` synthetic bundles and the committed pages; returns the bundle paths."""
    bases = [json.loads(path.read_text()) for path in sorted((ROOT / "content" / "runs").glob("*.json"))]
    rng = random.Random(seed)
    (folder / "runs").mkdir(parents=True)
    if (ROOT / "content" / "pages").is_dir():
        shutil.copytree(ROOT / "content" / "pages", folder / "pages")
    paths = []
    for index in range(runs):
        bundle = synthesize(bases[index % len(bases)], index, rng)
        path = folder / "runs" / f"{bundle['id']}.json"
        path.write_text(json.dumps(bundle, indent=2))
        paths.append(path)
    return paths


def _tree_pss_kb(pid: int) -> int:
    """Proportional set size of a process and its descendants (forked workers share pages)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            for line in Path(f"/proc/{current}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


class Build:
    """One `sitegen build` in a fresh process: wall and CPU seconds, peak memory, its report line."""

    def __init__(self, code: Path, content: Path, out: Path) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "sitegen", "build", "--content", str(content), "--out", str(out)],
            cwd=code, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        peak = [0]

        def watch() -> None:
            while process.poll() is None:
                peak[0] = max(peak[0], _tree_pss_kb(process.pid))
                time.sleep(SAMPLE_S)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        stdout, stderr = process.communicate()
        self.wall = time.perf_counter() - started
        watcher.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if process.returncode:
            raise SystemExit(f"build failed: {stderr.strip()}")
        self.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.peak_mb = peak[0] / 1024
        self.report = stdout.strip()


def touch_bundle(path: Path) -> None:
    """Change one figure of a bundle, as a resubmitted run would."""
    bundle = json.loads(path.read_text())
    cell = next(c for c in bundle["decode"] if c["total_tok_s"] is not None)
    cell["total_tok_s"] = round(cell["total_tok_s"] * 1.01 + 0.1, 1)
    path.write_text(json.dumps(bundle, indent=2))


# Rebuilds in one process, as `sitegen serve` runs them: the first brings the process's memory of
# the site (memo), each later one follows a changed bundle. Prints the medians of the later ones.
_IN_PROCESS = """
import json, statistics, sys, time
from pathlib import Path
sys.path.append(sys.argv[1])  # this benchmark's folder, after the checkout under test (the working directory)
from site_build import touch_bundle
from sitegen.build import build_site
content, out = Path(sys.argv[2]), Path(sys.argv[3])
build_site(content, out)
walls, cpus = [], []
for name in sys.argv[4:]:
    touch_bundle(content / "runs" / name)
    started, cpu = time.perf_counter(), time.process_time()
    build_site(content, out)
    walls.append(time.perf_counter() - started)
    cpus.append(time.process_time() - cpu)
print(json.dumps([statistics.median(walls), statistics.median(cpus)]))
"""


def in_process_rebuilds(code: Path, content: Path, out: Path, bundles: list[Path]) -> tuple[float, float]:
    """Median wall and CPU seconds of rebuilds after one bundle changes, in one long-running process."""
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(ROOT / "benchmarks"), str(content), str(out), *(p.name for p in bundles)],
                          cwd=code, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"in-process rebuilds failed: {done.stderr.strip()}")
    wall, cpu = json.loads(done.stdout.splitlines()[-1])
    return wall, cpu


def disk_mb(folder: Path) -> float:
    """Disk used by a folder, in MB, as du counts it (blocks, not bytes)."""
    return sum(p.lstat().st_blocks * 512 for p in folder.rglob("*")) / 1e6


def artifact_mb(folder: Path) -> float:
    """The size of a tar of the folder, in MB, as GitHub's upload-pages-artifact makes it with GNU tar: a
    512-byte header per entry (and a name record before one whose "./" path passes 99 characters),
    each file padded to 512 bytes, two closing blocks, in 10 KiB records."""
    def padded(size: int) -> int:
        return -(-size // 512) * 512

    size = 512 + 1024  # the folder's own entry, and the closing blocks
    for path in folder.rglob("*"):
        name = len(f"./{path.relative_to(folder).as_posix()}") + path.is_dir()  # a folder's name ends in "/"
        size += 512 + (512 + padded(name + 1) if name > 99 else 0) + (padded(path.lstat().st_size) if path.is_file() else 0)
    return -(-size // 10240) * 10240 / 1e6


def count_pages(out: Path) -> tuple[int, int]:
    """HTML pages written, and how many of them are comparisons."""
    pages = sum(1 for _ in out.rglob("*.html"))
    comparisons = sum(1 for p in (out / "compare").glob("*-vs-*.html"))
    return pages, comparisons


def row(name: str, value: str, target: str = "", ok: bool | None = None) -> str:
    verdict = "" if ok is None else ("ok" if ok else "MISSED")
    return f"{name:<44}{value:>14}  {target:<12}{verdict}"


def content_folder(work: Path, runs: int, seed: int, trash: Trash) -> list[Path]:
    """The synthesized content under work/content: made once, reused while it holds `runs` bundles."""
    folder = work / "content"
    if folder.is_dir() and sum(1 for _ in (folder / "runs").glob("*.json")) == runs:
        return sorted((folder / "runs").glob("*.json"))
    trash.put(folder)
    return make_content(folder, runs, seed)


def measure(args: argparse.Namespace, work: Path) -> None:
    """Build cold (median of --repeat), rebuild after one bundle changes (the first, then median of 3), print.

    Nothing is deleted before a timed build (benchmarks/disk.py): each cold build goes into a folder of
    its own (the last one into the site's, where the rebuilds find what it kept beside it: a site
    moved elsewhere is another folder, built whole), what an earlier run left is moved aside, and all
    of it is deleted once the figures are printed.
    """
    at_scale = args.runs >= 10_000
    targets = TARGETS_100K if args.runs >= 100_000 else TARGETS
    trash = Trash(work)
    bundles = content_folder(work, args.runs, args.seed, trash)
    out = work / "site"
    for leftover in [*work.glob("cold-*"), *work.glob("cold")]:
        trash.put(leftover)
    if args.repeat:  # the site before, and what its builds kept beside it (the last cold build goes in its place)
        for leftover in [out, *work.glob(".site-*"), *work.glob(".site.sitegen")]:
            trash.put(leftover)
    disk = [settle(work)]
    warm(work / "content")
    colds = []
    for i in range(args.repeat):
        if i:  # the build before flushed and the disk settled again, so that no build pays for another's writes
            disk.append(settle(work))
        colds.append(Build(args.code, work / "content", out if i == args.repeat - 1 else work / f"cold-{i}" / "site"))
    if not colds:
        if not out.is_dir():
            raise SystemExit(f"--repeat 0 needs a site built in {out}")
        Build(args.code, work / "content", out)  # untimed: brings the site to this code
    incremental = []
    for path in random.Random(args.seed).sample(bundles, 4):
        touch_bundle(path)
        incremental.append(Build(args.code, work / "content", out))
    first, rest = incremental[0], incremental[1:]
    served_wall, served_cpu = in_process_rebuilds(args.code, work / "content", out, random.Random(args.seed + 1).sample(bundles, 3))
    pages, comparisons = count_pages(out)
    index_kb = (out / "index.html").stat().st_size / 1024
    picker_kb = (out / "compare" / "index.html").stat().st_size / 1024
    ranking = out / "capacity" / "index.html"
    ranking_kb = ranking.stat().st_size / 1024 if ranking.is_file() else 0.0
    chunks_kb = sum(p.stat().st_size for p in (out / "data").glob("runs-*.js")) / 1024 if (out / "data").is_dir() else 0.0
    orders = list((out / "data").glob("sort-*.js")) if (out / "data").is_dir() else []
    order_kb = max((p.stat().st_size for p in orders), default=0) / 1024
    incr = statistics.median(b.wall for b in rest)
    incr_cpu = statistics.median(b.cpu for b in rest)
    print(f"site build with {args.runs:,} runs ({os.cpu_count()} cores, code from {args.code}); medians, shared machine; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(row("figure", "value", "target"))
    if colds:
        cold = statistics.median(b.wall for b in colds)
        peak = statistics.median(b.peak_mb for b in colds)
        print(row(f"cold build wall, median of {args.repeat}", f"{cold:.2f} s", f"≤ {targets['cold_s']:g} s" if at_scale else "", cold <= targets["cold_s"] if at_scale else None))
        print(row("cold build CPU (all processes)", f"{statistics.median(b.cpu for b in colds):.2f} s"))
        print(row("peak memory (PSS, build + workers)", f"{peak:.0f} MB", f"≤ {targets['peak_mb']:g} MB" if at_scale else "", peak <= targets["peak_mb"] if at_scale else None))
    print(row("index.html", f"{index_kb:,.1f} KB", f"≤ {targets['index_kb']:g} KB" if at_scale else "", index_kb <= targets["index_kb"] if at_scale else None))
    print(row("compare/index.html (picker)", f"{picker_kb:,.1f} KB"))
    print(row("capacity/index.html (ranking)", f"{ranking_kb:,.1f} KB"))
    print(row("data chunks (loaded on demand)", f"{chunks_kb:,.0f} KB"))
    print(row("largest sort order (a first sort loads one)", f"{order_kb:,.0f} KB"))
    print(row("pages written (comparisons)", f"{pages:,} ({comparisons:,})"))
    for name, value, key in (("site on disk (du)", disk_mb(out) / 1000, "disk_gb"),
                             ("Pages artifact (tar of the site)", artifact_mb(out) / 1000, "artifact_gb")):
        limit = targets.get(key) if at_scale else None
        print(row(name, f"{value:,.3f} GB", f"≤ {limit:g} GB" if limit else "", value <= limit if limit else None))
    print(row("first rebuild after one bundle (no stage kept)", f"{first.wall:.2f} s"))
    print(row("incremental after one bundle, median of 3", f"{incr:.2f} s", f"≤ {targets['incremental_s']:g} s", incr <= targets["incremental_s"]))
    print(row("incremental CPU (with interpreter start)", f"{incr_cpu:.2f} s"))
    print(row("rebuild in `sitegen serve`, median of 3", f"{served_wall:.2f} s", f"≤ {targets['incremental_s']:g} s",
              served_wall <= targets["incremental_s"]))
    print(row("rebuild in `sitegen serve`, CPU", f"{served_cpu:.2f} s"))
    if colds:
        print("each cold build, wall / CPU s: " + ", ".join(f"{b.wall:.2f} / {b.cpu:.2f}" for b in colds))
    print("\n".join(disk))
    print(f"last report: {(colds or incremental)[-1].report}")
    trash.empty()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="cold builds to take the median of (0: rebuilds only, of the site in --work)")
    parser.add_argument("--seed", type=int, default=20260903)
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose sitegen builds (default: this one)")
    parser.add_argument("--work", type=Path, default=None, help="keep the content and site here between runs (default: a temporary folder)")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", "sitegen", "runner"], cwd=args.code, check=True, stdout=subprocess.DEVNULL)
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        measure(args, args.work.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="site-build-bench-") as tmp:
            measure(args, Path(tmp))


if __name__ == "__main__":
    main()
