"""sitegen against Hugo on the same machine, in the same run: `python3 benchmarks/hugo_side_by_side.py --runs 1000`.

Needs only Hugo (`apt-get install hugo`) beside this checkout's own requirements; it runs from a
clean clone. It synthesizes runs as benchmarks/site_build.py does and builds them with sitegen once
(untimed) to know what sitegen publishes. Then (the default, "same pages") Hugo gets, per run,
the run page's whole view as JSON front matter, taken from sitegen's own views (run_view,
capacity_view, tail_view, the charts, the comparison partners, the Reproduce block, the CSV
cells and the picker record), and a page per comparison sitegen writes (compare_view.compare_page),
and renders them with the layouts in benchmarks/hugo/ into the same HTML: the run page, its
index.txt, measurements.csv and picker.js as output formats, bundle.json as a page resource, and
each comparison page (each run's decode section rendered once per compactness, as sitegen does,
by partialCached). Every other file sitegen writes (the listings and their data chunks, the
ranking, the content pages, runs.json, runs.csv, the feed, the schema, static/) is copied into
Hugo's static/ folder, so both write the same files; the script prints how many Hugo rendered.
`--check N` diffs N runs' pages and their comparisons against sitegen's, byte for byte and
after decoding character references (Go's html/template writes "+" as "&#43;").

`--light` keeps the earlier, lighter comparison (issue 10's first figure): Hugo renders only the
title, the decode matrix and the facts tables per run, and a list page, against sitegen's whole site.

Both tools build alternately, each into a fresh folder, `--repeat` times; the script prints the
median wall and CPU seconds of each, the pages (.html) and files each wrote, and their ratios.
Only the builds are timed, not the preparation. Target (issue 10): at 1,000 runs sitegen's wall
time no slower than Hugo's. The machine is shared: quote the load average with the figures.
"""

from __future__ import annotations

import argparse
import html
import html.parser
import json
import os
import random
import re
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

import msgspec  # noqa: E402
from markupsafe import Markup  # noqa: E402

from runner.bundle.display import PAGE_TEXT  # noqa: E402
from runner.bundle.schema import Bundle  # noqa: E402
from sitegen import charts, exports, runview  # noqa: E402
from sitegen.capacity import capacity_view  # noqa: E402
from sitegen.compare import compare_slug, related_pairs  # noqa: E402
from sitegen.compare_view import compare_page, picker_script  # noqa: E402
from sitegen.content_pages import load_pages  # noqa: E402
from sitegen.loader import load_bundle  # noqa: E402
from sitegen.render import SITE_NAME, settings_line  # noqa: E402
from sitegen.runview import run_view  # noqa: E402
from sitegen.tail_view import tail_view  # noqa: E402
from sitegen.urls import compare_file, run_dir  # noqa: E402

LAYOUTS = Path(__file__).resolve().parent / "hugo" / "layouts"
# What Hugo renders in each run folder (the rest of the folder, bundle.json, is a page resource).
RUN_OUTPUTS = ("index.html", "index.txt", "measurements.csv", "picker.js")
PICKER_CALL = "window.speedMatrixRun("

# --- the same pages -------------------------------------------------------------------------


def hugo_config(content: Path) -> dict:
    """Hugo's site config: the output formats of a run folder and the values every page shares."""
    pages = load_pages(content / "pages") if (content / "pages").is_dir() else []
    text_format = {"isPlainText": True, "notAlternative": True}
    return {
        "baseURL": "/",
        "title": SITE_NAME,
        "disableKinds": ["home", "section", "taxonomy", "term", "RSS", "sitemap", "robotsTXT", "404"],
        "disableHugoGeneratorInject": True,
        "mediaTypes": {"text/csv": {"suffixes": ["csv"]}},
        "outputFormats": {
            "runtext": {"mediaType": "text/plain", "baseName": "index", **text_format},
            "runcsv": {"mediaType": "text/csv", "baseName": "measurements", **text_format},
            "runpicker": {"mediaType": "text/javascript", "baseName": "picker", **text_format},
        },
        "params": {
            "site_name": SITE_NAME,
            "nav_pages": [{"slug": p.slug, "title": p.title} for p in pages],
            "has_methodology": any(p.slug == "methodology" for p in pages),
            "page_text": msgspec.to_builtins(PAGE_TEXT),
        },
    }


def view_data(view: runview.RunView) -> dict:
    """The run view as Hugo reads it; a cell's heat as Jinja prints it ("1.0", which Go would print "1")."""
    data = msgspec.to_builtins(view)
    for row in data["matrix"]:
        for cell in row["cells"]:
            if cell["heat"] is not None:
                cell["heat"] = str(cell["heat"])
    return data


def capacity_data(bundle: Bundle) -> dict:
    """`_capacity.html`'s values: the presets with their described targets, the answers, the script data."""
    view = capacity_view(bundle)
    return {
        "presets": [{"name": p.name, "describe": p.target.describe()} for p in view.presets],
        "rows": msgspec.to_builtins(view.rows),
        "data": view.data,
        "start": msgspec.to_builtins(view.start),
        "none": view.none,
    }


def csv_cells(bundle: Bundle) -> list[list[str]]:
    """measurements.csv's fields as sitegen writes them, before CSV quoting (which Hugo does)."""
    rows = [exports.prefill_measurement(p) for p in runview.sorted_prefill(bundle)]
    rows += [exports.decode_measurement(c) for c in runview.sorted_decode(bundle)]
    return [list(exports.MEASUREMENT_COLUMNS)] + [[exports.csv_cell(v) for v in row] for row in rows]


def run_front_matter(bundle: Bundle, partners: list[tuple[str, str, str]]) -> dict:
    """Everything run.html, index.txt, measurements.csv and picker.js read of one run."""
    view = run_view(bundle)
    picker = picker_script(bundle, view)
    return {
        "id": bundle.id,
        "root": "../../",
        "outputs": ["html", "runtext", "runcsv", "runpicker"],
        "view": view_data(view),
        "capacity": capacity_data(bundle),
        "tail": msgspec.to_builtins(tail_view(bundle)),
        "figures": {name: charts.figure_script_json(fig) for name, fig in charts.run_figures(bundle).items()},
        "partners": partners,
        "bundle": {
            "launch_command": bundle.launch_command,
            "engine": msgspec.to_builtins(bundle.engine),
            "hardware": msgspec.to_builtins(bundle.hardware),
            "run": msgspec.to_builtins(bundle.run),
            "notes": bundle.notes,
        },
        "settings": settings_line(bundle),
        "csv": csv_cells(bundle),
        "picker": picker[len(PICKER_CALL):-len(");\n")],
    }


def compare_front_matter(a: Bundle, b: Bundle, why: str) -> dict:
    """compare.html's own values; the runs' titles and decode sections come from their run pages."""
    page = compare_page(a, b, why, (run_view(a), run_view(b)), (Markup(), Markup()))
    return {
        "a": a.id, "b": b.id, "why": why, "root": "../", "url": "/" + compare_file(compare_slug(a, b)),
        "ratios": page["ratios"], "diffs": page["diffs"], "noise": page["noise"],
    }


def copy_rest(reference: Path, static: Path, rendered: set[str]) -> int:
    """Copy every file of sitegen's site that Hugo does not render into Hugo's static/; returns how many."""
    copied = 0
    for path in reference.rglob("*"):
        relative = path.relative_to(reference).as_posix()
        if path.is_file() and relative not in rendered:
            target = static / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copied += 1
    return copied


def make_hugo_site(folder: Path, content: Path, bundles: list[Path], reference: Path) -> tuple[int, int]:
    """A Hugo project that renders the run folders and comparison pages sitegen published in `reference`.

    Returns the counts of files Hugo renders and of files it copies.
    """
    shutil.copytree(LAYOUTS, folder / "layouts")
    (folder / "hugo.json").write_text(json.dumps(hugo_config(content), indent=1))
    loaded = {b.id: b for b in (load_bundle(path) for path in bundles)}
    pairs = [(loaded[a.id], loaded[b.id], why) for a, b, why in related_pairs(loaded.values())]
    published = {p.name for p in (reference / "compare").glob("*.html")} - {"index.html"}
    if {compare_file(compare_slug(a, b)).split("/")[1] for a, b, _ in pairs} != published:
        raise SystemExit("the comparison pairs differ from those sitegen published")
    partners: dict[str, list[tuple[str, str, str]]] = {}
    for a, b, why in pairs:
        slug = compare_slug(a, b)
        partners.setdefault(a.id, []).append((slug, runview.title(b), why))
        partners.setdefault(b.id, []).append((slug, runview.title(a), why))
    rendered: set[str] = set()
    runs = folder / "content" / "runs"
    runs.mkdir(parents=True)
    (runs / "_index.md").write_text('{"_build": {"render": "never"}}\n')
    for path, bundle in zip(bundles, loaded.values()):
        page = runs / bundle.id
        page.mkdir()
        (page / "index.md").write_text(json.dumps(run_front_matter(bundle, partners.get(bundle.id, []))) + "\n")
        shutil.copyfile(reference / run_dir(bundle.id) / "bundle.json", page / "bundle.json")
        rendered |= {run_dir(bundle.id) + name for name in RUN_OUTPUTS}
    compare = folder / "content" / "compare"
    compare.mkdir(parents=True)
    (compare / "_index.md").write_text('{"_build": {"render": "never"}}\n')
    for a, b, why in pairs:
        slug = compare_slug(a, b)
        (compare / f"{slug}.md").write_text(json.dumps(compare_front_matter(a, b, why)) + "\n")
        rendered.add(compare_file(slug))
    rendered_files = len(rendered)
    rendered |= {run_dir(b.id) + "bundle.json" for b in loaded.values()}
    return rendered_files, copy_rest(reference, folder / "static", rendered)


# --- the diff check ---------------------------------------------------------------------------


class Tokens(html.parser.HTMLParser):
    """An HTML document as its tags, attributes and text, character references decoded."""

    def __init__(self, collapse: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.collapse = collapse
        self.out: list[tuple] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.out.append(("start", tag, tuple(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.out.append(("end", tag))

    def handle_data(self, data: str) -> None:
        text = re.sub(r"\s+", " ", data).strip() if self.collapse else data
        if text:
            self.out.append(("text", text))


def tokens(text: str, collapse: bool = False) -> list[tuple]:
    parser = Tokens(collapse)
    parser.feed(text)
    parser.close()
    return parser.out


def check_pages(reference: Path, built: Path, runs: list[str], pairs: list[str]) -> None:
    """Compare Hugo's files with sitegen's: byte for byte, then as decoded HTML, then with whitespace collapsed."""
    files = [run_dir(r) + name for r in runs for name in RUN_OUTPUTS] + [compare_file(p) for p in pairs]
    kinds: dict[str, list[int]] = {}
    for relative in files:
        ours, theirs = (reference / relative).read_text(), (built / relative).read_text()
        kind = "compare page" if relative.startswith("compare/") else relative.rsplit("/", 1)[1]
        counts = kinds.setdefault(kind, [0, 0, 0, 0])
        counts[0] += 1
        counts[1] += ours == theirs
        if kind.endswith(".html") or kind == "compare page":
            counts[2] += tokens(ours) == tokens(theirs)
            counts[3] += tokens(ours, True) == tokens(theirs, True)
            if tokens(ours, True) != tokens(theirs, True):
                first = next(i for i, (x, y) in enumerate(zip(tokens(ours, True), tokens(theirs, True))) if x != y)
                print(f"  differs: {relative} at {tokens(ours, True)[first]} / {tokens(theirs, True)[first]}")
        else:
            counts[2] += ours == theirs
            counts[3] += ours == theirs
    print("diff check: files identical to sitegen's (bytes / decoded HTML / whitespace collapsed too)")
    for kind, (total, same, decoded, collapsed) in kinds.items():
        print(f"  {kind:<18}{same:>4} /{decoded:>4} /{collapsed:>4} of {total}")


# --- the light variant (the earlier figure) -----------------------------------------------------

LIGHT_BASEOF = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ .Title }} · speed-matrix</title><link rel="stylesheet" href="/style.css"></head>
<body><header class="site-header"><nav class="nav"><a class="brand" href="/">speed-matrix</a><a href="/">Runs</a></nav></header>
<main class="page">{{ block "main" . }}{{ end }}</main>
<footer class="site-footer"><p>Built by Hugo for a side-by-side benchmark.</p></footer></body></html>
"""
LIGHT_SINGLE = """{{ define "main" }}
<h1>{{ .Title }}</h1><p class="lead">{{ .Params.summary }}</p>
<section class="panel" id="matrix"><h2>Sustained decode</h2><div class="table-scroll"><table class="matrix">
<thead><tr><th>Context</th>{{ range .Params.concurrencies }}<th>{{ . }}</th>{{ end }}</tr></thead><tbody>
{{ range .Params.rows }}<tr><th>{{ .label }}</th>{{ range .cells }}<td class="cell status-{{ .status | urlize }}" style="--heat: {{ .heat }}"><span class="value">{{ .value }}</span>{{ with .note }}<span class="note">{{ . }}</span>{{ end }}</td>{{ end }}</tr>
{{ end }}</tbody></table></div></section>
{{ range .Params.sections }}<section class="panel"><h2>{{ .title }}</h2><table class="facts">{{ range .fields }}<tr><th>{{ .label }}</th><td>{{ .value }}</td></tr>{{ end }}</table></section>{{ end }}
{{ end }}
"""
LIGHT_LIST = """{{ define "main" }}<h1>Speed test matrices</h1><table class="runs"><tbody>
{{ range .Site.RegularPages }}<tr><td><a href="{{ .RelPermalink }}">{{ .Title }}</a></td><td>{{ .Params.summary }}</td></tr>{{ end }}
</tbody></table>{{ end }}
"""


def light_front_matter(bundle_path: Path) -> dict:
    """A run page's title, matrix and facts for Hugo, from sitegen's view of the bundle."""
    view = run_view(load_bundle(bundle_path))
    return {
        "title": view.title,
        "summary": view.summary_engine,
        "concurrencies": view.concurrencies,
        "rows": [{"label": row.label, "cells": [{"value": c.value, "note": c.note, "status": c.status or "none", "heat": c.heat} for c in row.cells]} for row in view.matrix],
        "sections": [{"title": s.heading, "fields": [{"label": f.label, "value": f.value} for f in s.fields]} for s in view.sections],
    }


def make_light_site(folder: Path, bundles: list[Path]) -> None:
    """A Hugo project with a light page per bundle and a list page."""
    (folder / "layouts" / "_default").mkdir(parents=True)
    (folder / "layouts" / "_default" / "baseof.html").write_text(LIGHT_BASEOF)
    (folder / "layouts" / "_default" / "single.html").write_text(LIGHT_SINGLE)
    (folder / "layouts" / "index.html").write_text(LIGHT_LIST)
    (folder / "static").mkdir()
    shutil.copy(ROOT / "templates" / "static" / "style.css", folder / "static" / "style.css")
    (folder / "hugo.toml").write_text('baseURL = "/"\ntitle = "speed-matrix"\ndisableKinds = ["taxonomy", "term", "RSS", "sitemap"]\n')
    (folder / "content" / "runs").mkdir(parents=True)
    for path in bundles:
        (folder / "content" / "runs" / f"{path.stem}.md").write_text(json.dumps(light_front_matter(path), indent=1) + "\n")


# --- timing -------------------------------------------------------------------------------------


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the command and its children) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sitegen_command(content: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "sitegen", "build", "--content", str(content), "--out", str(out)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose sitegen builds (default: this one)")
    parser.add_argument("--light", action="store_true", help="the earlier comparison: Hugo renders a light page per run")
    parser.add_argument("--check", type=int, default=0, metavar="N", help="diff N runs' files and their comparisons with sitegen's")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR (new) and keep it, to read the sites")
    args = parser.parse_args()
    hugo = shutil.which("hugo")
    if hugo is None:
        raise SystemExit("hugo is not installed: apt-get install hugo")
    version = subprocess.run([hugo, "version"], capture_output=True, text=True).stdout.split()[1]
    with tempfile.TemporaryDirectory(prefix="hugo-side-by-side-") as tmp:
        work = args.keep or Path(tmp)
        content = work / "content"
        bundles = make_content(content, args.runs, 20260903)
        if args.light:
            make_light_site(work / "hugo", bundles)
            detail = "light: Hugo renders title, matrix and facts per run and a list page"
        else:
            reference = work / "reference"
            subprocess.run(sitegen_command(content, reference), cwd=args.code, check=True, capture_output=True)
            rendered, copied = make_hugo_site(work / "hugo", content, bundles, reference)
            detail = f"same pages: Hugo renders {rendered:,} of sitegen's files and copies the other {copied:,}"
            if args.check:
                subprocess.run([hugo, "--quiet", "-d", str(work / "hugo-check")], cwd=work / "hugo", check=True)
                sample = random.Random(1).sample(sorted(b.stem for b in bundles), min(args.check, len(bundles)))
                pairs = [p.stem for p in (reference / "compare").glob("*.html") if any(p.stem.startswith(s) or p.stem.endswith(s) for s in sample)]
                check_pages(reference, work / "hugo-check", sample, pairs)
                if not args.keep:
                    shutil.rmtree(work / "hugo-check")
            if not args.keep:
                shutil.rmtree(reference)
        results: dict[str, list[tuple[float, float]]] = {"hugo": [], "sitegen": []}
        pages: dict[str, int] = {}
        files: dict[str, int] = {}
        for i in range(args.repeat):
            for name, command, cwd in (
                ("hugo", [hugo, "--quiet", "-d", str(work / f"hugo-out-{i}")], work / "hugo"),
                ("sitegen", sitegen_command(content, work / f"sitegen-out-{i}"), args.code),
            ):
                results[name].append(timed(command, cwd))
                out = work / f"{name}-out-{i}"
                pages[name] = sum(1 for _ in out.rglob("*.html"))
                files[name] = sum(1 for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
                shutil.rmtree(out)
    wall = {name: statistics.median(w for w, _ in values) for name, values in results.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in results.items()}
    print(f"{args.runs:,} runs, each tool into a fresh folder, medians of {args.repeat}, alternating; shared machine, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(detail)
    print(f"{'':<26}{'wall s':>8}{'CPU s':>8}{'pages':>8}{'files':>8}")
    for name in ("hugo", "sitegen"):
        print(f"{name + (' ' + version if name == 'hugo' else ''):<26}{wall[name]:>8.2f}{cpu[name]:>8.2f}{pages[name]:>8,}{files[name]:>8,}")
    print(f"sitegen / hugo: wall {wall['sitegen'] / wall['hugo']:.2f}x, CPU {cpu['sitegen'] / cpu['hugo']:.2f}x, "
          f"pages {pages['sitegen'] / pages['hugo']:.2f}x, files {files['sitegen'] / files['hugo']:.2f}x (target: wall ≤ 1x)")


if __name__ == "__main__":
    main()
