"""sitegen against Hugo on the same machine, in the same run: `python3 benchmarks/hugo_side_by_side.py --runs 1000`.

Needs Hugo (`apt-get install hugo`). Synthesizes runs as benchmarks/site_build.py does, gives Hugo
a page per run of the same shape (title, summary, the decode matrix with its cell notes and the
Hardware, Engine and Run tables, taken from sitegen's own view of the bundle, in JSON front
matter) under a base layout with the same stylesheet, plus a list page of every run; then builds
both, alternately, each into a fresh folder, `--repeat` times, and prints the median wall and CPU
seconds of each, their ratios, and the pages each wrote. Target (issue 10): at 1,000 runs sitegen's
wall time no slower than Hugo's. The machine is shared: figures are noisy.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from site_build import ROOT, make_content  # noqa: E402

from sitegen.loader import load_bundle  # noqa: E402
from sitegen.runview import run_view  # noqa: E402

BASEOF = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ .Title }} · speed-matrix</title><link rel="stylesheet" href="/style.css"></head>
<body><header class="site-header"><nav class="nav"><a class="brand" href="/">speed-matrix</a><a href="/">Runs</a></nav></header>
<main class="page">{{ block "main" . }}{{ end }}</main>
<footer class="site-footer"><p>Built by Hugo for a side-by-side benchmark.</p></footer></body></html>
"""
SINGLE = """{{ define "main" }}
<h1>{{ .Title }}</h1><p class="lead">{{ .Params.summary }}</p>
<section class="panel" id="matrix"><h2>Sustained decode</h2><div class="table-scroll"><table class="matrix">
<thead><tr><th>Context</th>{{ range .Params.concurrencies }}<th>{{ . }}</th>{{ end }}</tr></thead><tbody>
{{ range .Params.rows }}<tr><th>{{ .label }}</th>{{ range .cells }}<td class="cell status-{{ .status | urlize }}" style="--heat: {{ .heat }}"><span class="value">{{ .value }}</span>{{ with .note }}<span class="note">{{ . }}</span>{{ end }}</td>{{ end }}</tr>
{{ end }}</tbody></table></div></section>
{{ range .Params.sections }}<section class="panel"><h2>{{ .title }}</h2><table class="facts">{{ range .fields }}<tr><th>{{ .label }}</th><td>{{ .value }}</td></tr>{{ end }}</table></section>{{ end }}
{{ end }}
"""
LIST = """{{ define "main" }}<h1>Speed test matrices</h1><table class="runs"><tbody>
{{ range .Site.RegularPages }}<tr><td><a href="{{ .RelPermalink }}">{{ .Title }}</a></td><td>{{ .Params.summary }}</td></tr>{{ end }}
</tbody></table>{{ end }}
"""


def front_matter(bundle_path: Path) -> dict:
    """A run page's data for Hugo, from sitegen's view of the bundle."""
    view = run_view(load_bundle(bundle_path))
    return {
        "title": view.title,
        "summary": view.summary_engine,
        "concurrencies": view.concurrencies,
        "rows": [{"label": row.label, "cells": [{"value": c.value, "note": c.note, "status": c.status or "none", "heat": c.heat} for c in row.cells]} for row in view.matrix],
        "sections": [{"title": s.heading, "fields": [{"label": f.label, "value": f.value} for f in s.fields]} for s in view.sections],
    }


def make_hugo_site(folder: Path, bundles: list[Path]) -> None:
    """A Hugo project with a page per bundle."""
    (folder / "layouts" / "_default").mkdir(parents=True)
    (folder / "layouts" / "_default" / "baseof.html").write_text(BASEOF)
    (folder / "layouts" / "_default" / "single.html").write_text(SINGLE)
    (folder / "layouts" / "index.html").write_text(LIST)
    (folder / "static").mkdir()
    shutil.copy(ROOT / "templates" / "static" / "style.css", folder / "static" / "style.css")
    (folder / "hugo.toml").write_text('baseURL = "/"\ntitle = "speed-matrix"\ndisableKinds = ["taxonomy", "term", "RSS", "sitemap"]\n')
    (folder / "content" / "runs").mkdir(parents=True)
    for path in bundles:
        (folder / "content" / "runs" / f"{path.stem}.md").write_text(json.dumps(front_matter(path), indent=1) + "\n")


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the command and its children) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose sitegen builds (default: this one)")
    args = parser.parse_args()
    hugo = shutil.which("hugo")
    if hugo is None:
        raise SystemExit("hugo is not installed: apt-get install hugo")
    version = subprocess.run([hugo, "version"], capture_output=True, text=True).stdout.split()[1]
    with tempfile.TemporaryDirectory(prefix="hugo-side-by-side-") as tmp:
        work = Path(tmp)
        bundles = make_content(work / "content", args.runs, 20260903)
        make_hugo_site(work / "hugo", bundles)
        results: dict[str, list[tuple[float, float]]] = {"hugo": [], "sitegen": []}
        pages: dict[str, int] = {}
        for i in range(args.repeat):
            for name, command, cwd in (
                ("hugo", [hugo, "--quiet", "-d", str(work / f"hugo-out-{i}")], work / "hugo"),
                ("sitegen", [sys.executable, "-m", "sitegen", "build", "--content", str(work / "content"), "--out", str(work / f"sitegen-out-{i}")], args.code),
            ):
                results[name].append(timed(command, cwd))
                pages[name] = sum(1 for _ in (work / f"{name}-out-{i}").rglob("*.html"))
                shutil.rmtree(work / f"{name}-out-{i}")
    wall = {name: statistics.median(w for w, _ in values) for name, values in results.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in results.items()}
    print(f"{args.runs:,} runs, each tool into a fresh folder, medians of {args.repeat}, alternating; shared machine")
    print(f"{'':<26}{'wall s':>8}{'CPU s':>8}{'pages':>8}")
    for name in ("hugo", "sitegen"):
        print(f"{name + (' ' + version if name == 'hugo' else ''):<26}{wall[name]:>8.2f}{cpu[name]:>8.2f}{pages[name]:>8,}")
    print(f"sitegen / hugo: wall {wall['sitegen'] / wall['hugo']:.2f}x, CPU {cpu['sitegen'] / cpu['hugo']:.2f}x, "
          f"pages {pages['sitegen'] / pages['hugo']:.2f}x (target: wall ≤ 1x)")


if __name__ == "__main__":
    main()
