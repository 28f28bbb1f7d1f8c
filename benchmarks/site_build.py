"""Site build speed and page size at 1,000 runs: run on demand (`python3 benchmarks/site_build.py`), not a test.

Synthesizes runs from the committed bundles in content/runs (ids, ~30 models, 8 GPUs,
numbers scaled by seeded random factors), then reports the cold build time, the
incremental build time after one bundle changes, and the size of a run page's HTML.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import random
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from sitegen.build import build_site

ROOT = Path(__file__).resolve().parent.parent

FAMILIES = ("Ling-3.0-flash", "Inkling", "MiMo-V2.6-Flash", "Qwen3.5-122B-A10B", "Llama-4.2-Maverick", "Mistral-Large-3")
QUANTIZATIONS = ("fp4", "fp8", "bf16", "nvfp4", "awq")
GPUS = (
    ("H200 NVL", 141.0), ("H200 SXM", 141.0), ("H100 SXM", 80.0), ("B200", 180.0),
    ("MI300X", 192.0), ("RTX PRO 6000", 96.0), ("L40S", 48.0), ("A100 SXM", 80.0),
)
FASTER = ("total_tok_s", "per_request_tok_s", "prompt_tok_s")  # scaled by the run's speed factor
SLOWER = ("ttft_ms", "tbt_ms")  # scaled by its inverse
COUNTS = ("output_tokens",)
TARGETS = {"cold": 10.0, "incremental": 1.0, "page_kb": 64.0}


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
    measured = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=rng.randrange(365 * 24 * 60))
    bundle.update(id=slug(f"{model}-{gpu}-x{count}-{index:04d}"), model=model, measured_at=measured.isoformat().replace("+00:00", "Z"))
    bundle["hardware"].update(gpu=gpu, vram_per_gpu_gb=vram, gpu_count=count)
    factor = rng.uniform(0.3, 3.0)
    for point in bundle["prefill"] + bundle["decode"]:
        scale_figures(point, factor, rng)
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


def timed_build(content: Path, out: Path) -> float:
    """Seconds one build_site call takes."""
    started = time.perf_counter()
    build_site(content, out)
    return time.perf_counter() - started


def touch_bundle(path: Path) -> None:
    """Change one figure of a bundle, as a resubmitted run would."""
    bundle = json.loads(path.read_text())
    cell = next(c for c in bundle["decode"] if c["total_tok_s"] is not None)
    cell["total_tok_s"] = round(cell["total_tok_s"] * 1.01 + 0.1, 1)
    path.write_text(json.dumps(bundle, indent=2))


def page_sizes_kb(out: Path) -> list[float]:
    """Size in KB of every run page's index.html."""
    return [page.stat().st_size / 1024 for page in (out / "runs").glob("*/index.html")]


def report(runs: int, cold: float, incremental: float, sizes: list[float]) -> str:
    """The figures as a small table against their targets."""
    rows = [
        ("cold build, median of 3", f"{cold:.2f} s", f"≤ {TARGETS['cold']:g} s", cold <= TARGETS["cold"]),
        ("incremental build, median of 3", f"{incremental:.2f} s", f"≤ {TARGETS['incremental']:g} s", incremental <= TARGETS["incremental"]),
        ("run page HTML, max", f"{max(sizes):.1f} KB", f"≤ {TARGETS['page_kb']:g} KB", max(sizes) <= TARGETS["page_kb"]),
        ("run page HTML, median", f"{statistics.median(sizes):.1f} KB", "", None),
    ]
    lines = [f"site build with {runs:,} runs ({len(sizes):,} run pages)", f"{'figure':<32}{'value':>10}  {'target':<10}"]
    for name, value, target, ok in rows:
        verdict = "" if ok is None else ("ok" if ok else "MISSED")
        lines.append(f"{name:<32}{value:>10}  {target:<10}{verdict}")
    return "\n".join(lines)


def main() -> None:
    """Synthesize, build cold three times, build incrementally three times, measure pages, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20260903)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="site-build-bench-") as tmp:
        work = Path(tmp)
        bundles = make_content(work / "content", args.runs, args.seed)
        cold = statistics.median(timed_build(work / "content", work / f"cold-{i}" / "site") for i in range(3))
        out = work / "site"
        build_site(work / "content", out)
        incremental = []
        for path in random.Random(args.seed).sample(bundles, 3):
            touch_bundle(path)
            incremental.append(timed_build(work / "content", out))
        print(report(args.runs, cold, statistics.median(incremental), page_sizes_kb(out)))


if __name__ == "__main__":
    main()
