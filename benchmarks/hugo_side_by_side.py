"""sitegen against Hugo on the same machine, in the same run: `python3 benchmarks/hugo_side_by_side.py --runs 1000`.

Runs from a clean clone with only Hugo added (`apt-get install hugo`; 0.111 or later) to the
project's own requirements. It synthesizes runs as benchmarks/site_build.py does and builds them
once with sitegen, untimed, to know what sitegen publishes.

What the default compares (the same pages): Hugo gets each run's page view as JSON front matter,
taken from sitegen's own views (run_view, capacity_view, tail_view, the chart data, the
comparison partners, the Reproduce block, the CSV fields and the picker record), a page per
comparison sitegen writes (compare_view.compare_page), and the listings' views (index, model and
GPU pages, picker; captured from sitegen.pages.listings). The layouts in benchmarks/hugo/ render them
into the same files: the run page, its index.txt, measurements.csv and picker.js (output formats),
bundle.json (a page resource), the comparison pages (each run's decode section rendered once per
compactness by partialCached, as sitegen renders it once) and the listings. The files sitegen
writes that are not pages of a run or a listing (listing data chunks, the ranking, the content
pages, runs.json, runs.csv, the feed, the schema, static/) are copied from Hugo's static/, so both
tools write the same files. The layouts are translations of templates/: `--check N` builds N runs
varied to show every section and markup-like text and diffs every file Hugo renders against
sitegen's, so a template change that the layouts miss shows up there.

`--light` is the earlier, lighter comparison (benchmarks/HISTORY.md): Hugo renders only the
title, the decode matrix and the facts tables per run, and a list page, against sitegen's whole site.

Either way both tools build alternately, each into a fresh folder, `--repeat` times; only the
builds are timed, not the preparation. It prints the median wall and CPU seconds of each, the
pages (.html) and files each wrote, and the ratios. Target (docs/scale.md): at 1,000 runs sitegen's
wall time no slower than Hugo's. The machine is shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import html.parser
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec  # noqa: E402
from disk import Trash, settle, warm  # noqa: E402
from markupsafe import Markup  # noqa: E402
from site_build import ROOT, make_content  # noqa: E402

from runner.bundle.display import PAGE_TEXT  # noqa: E402
from runner.bundle.schema import Bundle  # noqa: E402
from sitegen.content.catalog import piece_positions, scan  # noqa: E402
from sitegen.content.loader import load_bundle  # noqa: E402
from sitegen.content.markdown import load_pages  # noqa: E402
from sitegen.figures.compare import compare_slug, related_pairs  # noqa: E402
from sitegen.pages import exports, listings, registry  # noqa: E402
from sitegen.pages.context import Site  # noqa: E402
from sitegen.pages.render import SITE_NAME, settings_line  # noqa: E402
from sitegen.urls import Page, compare_file, run_dir  # noqa: E402
from sitegen.views import charts, runview  # noqa: E402
from sitegen.views.capacity_view import capacity_view  # noqa: E402
from sitegen.views.compare_view import compare_page, picker_script  # noqa: E402
from sitegen.views.index_view import COLUMNS  # noqa: E402
from sitegen.views.runview import run_view  # noqa: E402
from sitegen.views.tail_view import tail_view  # noqa: E402

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
        "disableKinds": ["section", "taxonomy", "term", "RSS", "sitemap", "robotsTXT", "404"],
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
            "columns": COLUMNS,
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
    """compare.html's own values and the runs' titles; each run's decode section comes from its run page."""
    views = (run_view(a), run_view(b))
    page = compare_page(a, b, why, views, (Markup(), Markup()))
    return {
        "a": a.id, "b": b.id, "title_a": views[0].title, "title_b": views[1].title, "why": why, "root": "../",
        "url": "/" + compare_file(compare_slug(a, b)),
        "ratios": page["ratios"], "diffs": page["diffs"], "noise": page["noise"],
    }


class Listings:
    """The listing pages' views, as sitegen's write_listings computes them, captured instead of rendered."""

    def __init__(self, content: Path) -> None:
        self.pages: list[tuple[str, Page, dict]] = []
        runs = content / "runs"
        pieces = registry.pieces()
        entries = scan(runs, {}, pieces=pieces)
        site = Site(runs=runs, entries=entries, pages=load_pages(content / "pages") if (content / "pages").is_dir() else [],
                    pairs=[], env=None, code="", positions=piece_positions(pieces))  # type: ignore[arg-type]  # nothing is rendered
        real = listings.write_page
        listings.write_page = lambda stage, site, template, target, **view: self.pages.append((template, target, view))
        try:
            listings.write_listings(_Discard(), site, _Nothing())  # type: ignore[arg-type]
        finally:
            listings.write_page = real

    def front_matters(self) -> list[tuple[str, dict]]:
        """(content file, front matter) of each listing page, at the listing's own path."""
        found = []
        for template, target, view in self.pages:
            data = {"root": target.urls.root, "url": "/" + target.path}
            if template == "picker.html":
                found.append(("compare/picker.md", {**data, "layout": "picker", "total": view["total"], "chunks": view["chunks"]}))
                continue
            data.update(
                layout="listing", heading=view["heading"], lead=view["lead"], total=view["total"], total_text=f"{view['total']:,}",
                chunks=view["chunks"], sorts=view["sorts"], scope=view["scope"], compare_url=view["compare_url"],
                facets=msgspec.to_builtins(view["facets"]), unplotted=view["unplotted"],
                links=[{"label": g["label"], "entries": msgspec.to_builtins(g["entries"])} for g in view["links"]],
                figure=view["figure"], figure_caption=view["figure_caption"],
                rows=[{"id": row.s.id, "model": row.s.model,
                       "cells": {key: {**msgspec.to_builtins(cell), "sort": str(cell.sort)} for key, cell in cells.items()}}
                      for row, cells in view["rows"]],
            )
            found.append(("_index.md" if target.path == "" else target.path.rstrip("/") + ".md", data))
        return found


class _Discard:
    """A stage that drops what it is given (the listings' data chunks are copied from sitegen's site)."""

    def write(self, path: str, text: str | bytes) -> None:
        pass


class _Nothing:
    """A build plan in which nothing is unchanged."""

    def unchanged(self, output: object) -> bool:
        return False


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


def make_hugo_site(folder: Path, content: Path, bundles: list[Path], reference: Path) -> tuple[set[str], int]:
    """A Hugo project that renders the run folders, comparison pages and listings sitegen published
    in `reference`. Returns the site paths Hugo renders and the count of files it copies."""
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
    for bundle in loaded.values():
        page = runs / bundle.id
        page.mkdir()
        (page / "index.md").write_text(json.dumps(run_front_matter(bundle, partners.get(bundle.id, []))) + "\n")
        shutil.copyfile(reference / run_dir(bundle.id) / "bundle.json", page / "bundle.json")
        rendered |= {run_dir(bundle.id) + name for name in RUN_OUTPUTS}
    compare = folder / "content" / "compare"
    compare.mkdir(parents=True)
    (compare / "_index.md").write_text('{"_build": {"render": "never"}}\n')
    for name, data in Listings(content).front_matters():
        (folder / "content" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "content" / name).write_text(json.dumps(data) + "\n")
        rendered.add(data["url"].lstrip("/") + "index.html")
    for a, b, why in pairs:
        slug = compare_slug(a, b)
        (compare / f"{slug}.md").write_text(json.dumps(compare_front_matter(a, b, why)) + "\n")
        rendered.add(compare_file(slug))
    resources = {run_dir(b.id) + "bundle.json" for b in loaded.values()}
    return rendered, copy_rest(reference, folder / "static", rendered | resources)


# --- the diff check ---------------------------------------------------------------------------


class Tokens(html.parser.HTMLParser):
    """An HTML document as its tags, attributes and text, character references decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[tuple] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.out.append(("start", tag, tuple(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.out.append(("end", tag))

    def handle_data(self, data: str) -> None:
        self.out.append(("text", data))


def tokens(text: str) -> list[tuple]:
    parser = Tokens()
    parser.feed(text)
    parser.close()
    return parser.out


def kind_of(relative: str) -> str:
    """What a site file is, for the check's table."""
    if relative.startswith("runs/"):
        return "run " + relative.rsplit("/", 1)[1]
    if relative.startswith("compare/") and relative != "compare/index.html":
        return "comparison page"
    return "listing page"


HOSTILE = "<b>bold</b> & \"quoted\" 'single' +plus"


def vary(path: Path, index: int) -> None:
    """Give a synthesized run what the plain ones lack, so the check sees every section of the page:
    failed cells and their reasons, tail percentiles and repeats, a distorted cell, the measuring
    machine and notes, an unknown GPU count, and markup-like text everywhere it can go."""
    bundle = json.loads(path.read_text())
    valid = [c for c in bundle["decode"] if c["status"] == "Valid"]
    kind = index % 5
    if kind == 0:
        cell = valid[-1]
        cell.update(status="Failed", error="HTTP 500: " + HOSTILE, total_tok_s=None, per_request_tok_s=None, ttft_ms=None, tbt_ms=None)
        bundle["prefill"][-1].update(status="Failed", error="timed out " + HOSTILE, prompt_tok_s=None, ttft_ms=None)
    elif kind == 1:
        for cell in valid[:6]:
            cell.update(ttft_p90_ms=cell["ttft_ms"] * 1.5, ttft_p99_ms=cell["ttft_ms"] * 2.25, tbt_p90_ms=cell["tbt_ms"] * 1.2, tbt_p99_ms=cell["tbt_ms"] * 1.9)
            repeats = [{k: v for k, v in cell.items() if not k.endswith(("p90_ms", "p99_ms"))} for _ in range(3)]
            for i, repeat in enumerate(repeats):
                repeat["total_tok_s"] = round(cell["total_tok_s"] * (0.97 + 0.03 * i), 1)
            repeats[2].update(status="Looped", total_tok_s=None)
            cell.update(repeats=repeats, total_tok_s_spread_pct=3.1)
    elif kind == 2:
        valid[0].update(status="Distorted", distortion="the client read tokens late " + HOSTILE)
    elif kind == 3:
        bundle["hardware"].update(gpu_driver="580.65 " + HOSTILE, cuda_version="13.0",
                                  client={"cpu": "EPYC <9004>", "cores": 16, "memory_gb": 64.0, "nice": -10})
        bundle["notes"] = "Notes: " + HOSTILE
        bundle["launch_command"] = (bundle.get("launch_command") or "vllm serve m") + " --chat-template '<think>&amp;' --x=\"+1\""
    else:
        bundle["hardware"]["gpu_count"] = None
        bundle["model"] += " <beta> & co"
    path.write_text(json.dumps(bundle, indent=2))


def check(hugo: str, work: Path, runs: int, code: Path) -> None:
    """Build `runs` varied runs with both tools and diff every file Hugo renders against sitegen's."""
    bundles = make_content(work / "content", runs, 20261201)
    for index, path in enumerate(bundles):
        vary(path, index)
    subprocess.run(sitegen_command(work / "content", work / "reference"), cwd=code, check=True, capture_output=True)
    rendered, _ = make_hugo_site(work / "hugo", work / "content", bundles, work / "reference")
    subprocess.run([hugo, "--quiet", "-d", str(work / "built")], cwd=work / "hugo", check=True)
    print(f"diff check: {runs:,} runs varied to show every section and markup-like text")
    check_pages(work / "reference", work / "built", rendered)


def check_pages(reference: Path, built: Path, files: set[str]) -> None:
    """Compare Hugo's files with sitegen's: byte for byte; with Go's "&#43;" read as "+"; as decoded HTML."""
    kinds: dict[str, list[int]] = {}
    for relative in sorted(files):
        ours, theirs = (reference / relative).read_text(), (built / relative).read_text()
        counts = kinds.setdefault(kind_of(relative), [0, 0, 0, 0])
        same = [True, ours == theirs, ours == theirs.replace("&#43;", "+"),
                ours == theirs or (relative.endswith(".html") and tokens(ours) == tokens(theirs))]
        counts[:] = [c + ok for c, ok in zip(counts, same)]
        if not same[3]:
            first = next((i for i, (x, y) in enumerate(zip(tokens(ours), tokens(theirs))) if x != y), 0)
            print(f"  differs: {relative}: sitegen {tokens(ours)[first:first + 2]}, Hugo {tokens(theirs)[first:first + 2]}")
    print("  Hugo's files against sitegen's: identical bytes / identical once Go's &#43; reads + / same decoded HTML, of all")
    for kind, (total, same, plus, decoded) in kinds.items():
        print(f"  {kind:<22}{same:>5} /{plus:>5} /{decoded:>5} of {total}")


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
    parser.add_argument("--check", type=int, default=0, metavar="N", help="first build N varied runs with both and diff every file Hugo renders")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR (new) and keep it, to read the sites")
    args = parser.parse_args()
    hugo = shutil.which("hugo")
    if hugo is None:
        raise SystemExit("hugo is not installed: apt-get install hugo")
    version = subprocess.run([hugo, "version"], capture_output=True, text=True, check=True).stdout.split()[1]
    with tempfile.TemporaryDirectory(prefix="hugo-side-by-side-") as tmp:
        work = args.keep or Path(tmp)
        trash = Trash(work)  # nothing is deleted between timed builds (benchmarks/disk.py)
        if args.check:
            check(hugo, work / "check", args.check, args.code)
        content = work / "content"
        bundles = make_content(content, args.runs, 20260903)
        if args.light:
            make_light_site(work / "hugo", bundles)
            detail = "light: Hugo renders title, matrix and facts per run and a list page"
        else:
            reference = work / "reference"
            subprocess.run(sitegen_command(content, reference), cwd=args.code, check=True, capture_output=True)
            rendered, copied = make_hugo_site(work / "hugo", content, bundles, reference)
            detail = (f"same pages: Hugo renders {len(rendered):,} of sitegen's files, publishes each bundle.json "
                      f"as a page resource and copies the other {copied:,} (listing data, ranking, content pages, downloads, static/)")
            if not args.keep:
                trash.put(reference)
        results: dict[str, list[tuple[float, float]]] = {"hugo": [], "sitegen": []}
        pages: dict[str, int] = {}
        files: dict[str, int] = {}
        disk = settle(work)
        warm(content)
        for i in range(args.repeat):
            for name, command, cwd in (
                ("hugo", [hugo, "--quiet", "-d", str(work / f"hugo-out-{i}")], work / "hugo"),
                ("sitegen", sitegen_command(content, work / f"sitegen-out-{i}"), args.code),
            ):
                results[name].append(timed(command, cwd))
                out = work / f"{name}-out-{i}"
                pages[name] = sum(1 for _ in out.rglob("*.html"))
                files[name] = sum(1 for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
        trash.empty()
    wall = {name: statistics.median(w for w, _ in values) for name, values in results.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in results.items()}
    print(f"{args.runs:,} runs, each tool into a fresh folder, medians of {args.repeat}, alternating; shared machine, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(detail)
    print(disk)
    print(f"{'':<26}{'wall s':>8}{'CPU s':>8}{'pages':>8}{'files':>8}")
    for name in ("hugo", "sitegen"):
        print(f"{name + (' ' + version if name == 'hugo' else ''):<26}{wall[name]:>8.2f}{cpu[name]:>8.2f}{pages[name]:>8,}{files[name]:>8,}")
    for name, values in results.items():
        print(f"{name} each build, wall / CPU s: " + ", ".join(f"{w:.2f} / {c:.2f}" for w, c in values))
    print(f"sitegen / hugo: wall {wall['sitegen'] / wall['hugo']:.2f}x, CPU {cpu['sitegen'] / cpu['hugo']:.2f}x, "
          f"pages {pages['sitegen'] / pages['hugo']:.2f}x, files {files['sitegen'] / files['hugo']:.2f}x (target: wall ≤ 1x)")


if __name__ == "__main__":
    main()
