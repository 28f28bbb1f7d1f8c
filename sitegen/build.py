"""`sitegen build`: bundles in, a whole static site out, atomically and incrementally."""

from __future__ import annotations

import datetime as dt
import gc
import json
import multiprocessing
import os
import time
from collections import OrderedDict
from pathlib import Path

import jinja2
import msgspec
from markupsafe import Markup

from runner.bundle.schema import (
    Bundle,
    bundle_json_schema,
    decode_bundle,
    encode_bundle,
)
from sitegen import charts, compare, exports, runview
from sitegen.cache import code_digest, digest
from sitegen.capacity import capacity_view, ranking_view
from sitegen.catalog import (
    CACHE_FILE,
    RunEntry,
    count_files,
    encode_cache,
    read_cache,
    related_pairs,
    scan,
)
from sitegen.errors import InputError
from sitegen.index_view import (
    COLUMNS,
    chunk_scripts,
    chunk_urls,
    facets,
    first_screen,
    newest_first,
)
from sitegen.loader import load_bundle
from sitegen.noise import noise_sentence, within_noise
from sitegen.progress import Progress
from sitegen.render import DEFAULT_TEMPLATES, make_environment, render_run_page
from sitegen.staging import Publication, Stage, staged
from sitegen.summary import RunSummary
from sitegen.tail_view import tail_view
from sitegen.text_page import render_text
from sitegen.urls import (
    RANKING_DIR,
    Urls,
    compare_file,
    gpu_dir,
    model_dir,
    page_dir,
    run_dir,
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


FEED_RUNS = 100  # the feed carries the newest runs only: readers want what is new, not the archive
PARALLEL_MIN = 64  # pages below which rendering stays in this process (starting workers costs more)
WORKER_CHUNK = 64  # render tasks a worker takes at a time; consecutive tasks share bundles


class Link(msgspec.Struct, frozen=True):
    href: str
    text: str


class Site(msgspec.Struct, kw_only=True):
    """What a build knows of every run (small records, not bundles), shared by the page writers."""

    runs: Path
    entries: list[RunEntry]
    pages: list
    pairs: list[tuple[RunEntry, RunEntry, str]]
    env: jinja2.Environment
    code: str
    shared_key: str = ""

    @property
    def summaries(self) -> list[RunSummary]:
        return [e.summary for e in self.entries]

    def context(self) -> dict:
        """Template values every page shares."""
        return {"nav_pages": self.pages}

    @property
    def context_key(self) -> str:
        """What of the shared values an output's key must cover (computed once: every output asks)."""
        if not self.shared_key:
            self.shared_key = json.dumps([(p.slug, p.title) for p in self.pages])
        return self.shared_key


def build_site(content: Path, out: Path, templates: Path | None = None, jobs: int | None = None, progress: Progress | None = None) -> str:
    """Build the site from content/ into out/ and return a one-line report.

    Pages are rendered by `jobs` worker processes (default: one per core); `progress`
    shows how far a long build is on a terminal.
    """
    from sitegen.content_pages import load_pages

    started = time.perf_counter()
    progress = progress or Progress()
    templates = templates or DEFAULT_TEMPLATES
    if not (templates / "static").is_dir():
        raise InputError(templates, None, "not a templates folder (it needs the page templates and static/); check --templates")
    runs = runs_folder(content)
    code = code_digest(templates)
    progress.start("reading bundles", count_files(runs))
    cache = read_cache(out, code)
    entries = scan(runs, cache.by_name(), progress.advance)
    gc.freeze()  # the run records live to the end: keep the collector (and forked workers' pages) off them
    try:
        site = Site(
            runs=runs,
            entries=entries,
            pages=load_pages(content / "pages") if (content / "pages").is_dir() else [],
            pairs=related_pairs(entries, cache),
            env=make_environment(templates),
            code=code,
        )
        with staged(out, [content / "runs", content / "pages", templates]) as (stage, plan):
            tasks = plan_pages(site, plan)
            progress.start("rendering pages", len(tasks))
            render_pages(stage, Renderer(site, stage), tasks, jobs or cpu_count(), progress)
            write_listings(stage, site, plan)
            write_ranking(stage, site, plan)
            write_content_pages(stage, site)
            write_downloads(stage, site, plan)
            copy_static(stage, templates / "static")
            stage.write(CACHE_FILE, encode_cache(entries, site.pairs, code))
    finally:
        gc.unfreeze()
        progress.close()
    seconds = time.perf_counter() - started
    rendered = len(plan.keys) - plan.reused
    return (
        f"built {plural(len(entries), 'run')} and {plural(len(site.pairs), 'comparison')} into {out}/ in {seconds:.2f} s "
        f"({rendered} pages rendered, {plan.reused} unchanged and reused)"
    )


def cpu_count() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def runs_folder(content: Path) -> Path:
    """content/runs, which must exist: a mistyped --content would otherwise publish an empty site.

    An empty runs/ is fine (a first site has no runs yet).
    """
    runs = content / "runs"
    if not runs.is_dir():
        raise InputError(runs, None, "no such folder (--content should be the folder holding runs/ and pages/)")
    return runs


def _partners(pairs: list[tuple[RunEntry, RunEntry, str]]) -> dict[str, list[tuple[str, str, str]]]:
    """For each run, its comparison pages as (slug, other run's title, reason)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for a, b, why in pairs:
        slug = compare.compare_slug(a, b)
        found.setdefault(a.id, []).append((slug, b.title, why))
        found.setdefault(b.id, []).append((slug, a.title, why))
    return found


# A page to render: ("run", bundle path, partners) or ("compare", baseline path, other path, reason).
Task = tuple


def plan_pages(site: Site, plan: Publication) -> list[Task]:
    """The run folders and comparison pages whose inputs changed.

    Runs come by model, then date, each followed by the comparisons it is the baseline of: a
    run's partners are mostly its model's runs nearest in time, so a worker taking tasks in
    order finds both bundles of a comparison among those it has just read.
    """
    partners = _partners(site.pairs)
    baseline_of: dict[str, list[tuple[RunEntry, RunEntry, str]]] = {}
    for pair in site.pairs:
        baseline_of.setdefault(pair[0].id, []).append(pair)
    tasks: list[Task] = []
    for entry in sorted(site.entries, key=lambda e: (e.keys.model, e.measured_at or _EPOCH, e.id)):
        mine = partners.get(entry.id, [])
        key = digest(site.code, entry.fingerprint, site.context_key, json.dumps(mine))
        if not plan.unchanged(run_dir(entry.id), key):
            tasks.append(("run", str(site.runs / entry.name), mine))
        for a, b, why in baseline_of.get(entry.id, []):
            key = digest(site.code, a.fingerprint, b.fingerprint, why, site.context_key)
            if not plan.unchanged(compare_file(compare.compare_slug(a, b)), key):
                tasks.append(("compare", str(site.runs / a.name), str(site.runs / b.name), why))
    return tasks


class Renderer:
    """Renders run folders and comparison pages into the stage, in this process or a worker.

    It keeps the last few runs' bundles and rendered decode sections, since a run's comparisons
    follow its page; memory stays bounded whatever the number of runs.
    """

    KEEP = 64

    def __init__(self, site: Site, stage: Stage) -> None:
        self.env = site.env
        self.context = site.context()
        self.stage = stage
        self.loaded: OrderedDict[str, tuple[Bundle, runview.RunView, dict[bool, Markup]]] = OrderedDict()

    def render(self, task: Task) -> list[str]:
        """Render one task into the stage; returns the site paths it wrote."""
        before = len(self.stage.written)
        if task[0] == "run":
            self.run(*task[1:])
        else:
            self.compare(*task[1:])
        return self.stage.written[before:]

    def load(self, path: str) -> tuple[Bundle, runview.RunView, dict[bool, Markup]]:
        """A bundle, its view and its decode sections by compactness, read once while recent."""
        if path in self.loaded:
            self.loaded.move_to_end(path)
        else:
            bundle = load_bundle(Path(path))
            self.loaded[path] = (bundle, runview.run_view(bundle), {})
            if len(self.loaded) > self.KEEP:
                self.loaded.popitem(last=False)
        return self.loaded[path]

    def decode_block(self, path: str, compact: bool = False) -> Markup:
        """A run's rendered Sustained decode section (`_decode.html`); `compact` leaves out the
        TTFT lines so two matrices fit side by side."""
        _, view, blocks = self.load(path)
        if compact not in blocks:
            blocks[compact] = Markup(self.env.get_template("_decode.html").render(view=view, compact=compact))
        return blocks[compact]

    def run(self, path: str, partners: list) -> None:
        """A run's folder: the page, its plain text, bundle.json, measurements.csv and picker data."""
        bundle, view, _ = self.load(path)
        folder = run_dir(bundle.id)
        figures = {name: charts.figure_script_json(fig) for name, fig in charts.run_figures(bundle).items()}
        page_context = {**self.context, "partners": partners, "figures": figures, "decode_block": self.decode_block(path),
                        "capacity": capacity_view(bundle), "tail": tail_view(bundle)}
        self.stage.write(folder + "index.html", render_run_page(self.env, bundle, view, page_context))
        self.stage.write(folder + "index.txt", render_text(view))
        self.stage.write(folder + "bundle.json", encode_bundle(bundle))
        self.stage.write(folder + "measurements.csv", exports.measurements_csv(bundle))
        self.stage.write(folder + "picker.js", _picker_script(bundle, view))

    def compare(self, path_a: str, path_b: str, why: str) -> None:
        """A build-time comparison page: both matrices, the ratio matrix and what differs."""
        (a, view_a, _), (b, view_b, _) = self.load(path_a), self.load(path_b)
        verdicts = within_noise(a, b)
        html = self.env.get_template("compare.html").render(
            urls=Urls(1), a=a, b=b, why=why, view_a=view_a, view_b=view_b,
            decode_a=self.decode_block(path_a, compact=True), decode_b=self.decode_block(path_b, compact=True),
            ratios=compare_rows(a, b, verdicts), diffs=compare.field_diffs(a, b), noise=noise_sentence(verdicts),
            **self.context,
        )
        self.stage.write(compare_file(compare.compare_slug(a, b)), html)


_WORKER: Renderer | None = None  # the renderer a forked worker inherits


def _render_in_worker(task: Task) -> list[str]:
    assert _WORKER is not None
    return _WORKER.render(task)


def render_pages(stage: Stage, renderer: Renderer, tasks: list[Task], jobs: int, progress: Progress) -> None:
    """Render every task, across `jobs` forked processes when there are enough of them."""
    global _WORKER
    if jobs <= 1 or len(tasks) < PARALLEL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        for task in tasks:
            renderer.render(task)
            progress.advance()
        return
    _WORKER = renderer
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for written in pool.imap_unordered(_render_in_worker, tasks, chunksize=WORKER_CHUNK):
                stage.written += written
                progress.advance()
    finally:
        _WORKER = None


def _picker_script(bundle: Bundle, view: runview.RunView) -> str:
    """The run's matrix as a script the compare picker loads (script tags work from file://)."""
    record = {
        "id": bundle.id,
        "title": view.title,
        "summary": view.summary_engine,
        "launch": bundle.launch_command or "",
        "facts": list(compare.section_values(bundle).items()),
        "concurrencies": view.concurrencies,
        "rows": [
            {"label": row.label, "cells": [{"value": c.value, "note": c.note, "heat": c.heat, "status": c.status} for c in row.cells]}
            for row in view.matrix
        ],
        "totals": {f"{c.context_tokens}x{c.concurrency}": c.total_tok_s for c in bundle.decode if c.total_tok_s is not None},
        "contexts": {row.label: c for row, c in zip(view.matrix, runview.contexts_of(bundle))},
    }
    return "window.speedMatrixRun(" + charts.figure_script_json(record) + ");\n"


def compare_rows(a: Bundle, b: Bundle, noise: dict[tuple[int, int], bool]) -> list[dict]:
    """The ratio matrix as display rows: "1.23×" and a direction class per cell; "≈" marks a
    difference within the noise of the runs' repeats."""
    from runner.bundle import formats as f

    rows = []
    for row in compare.ratio_matrix(a, b):
        cells = []
        for cell in row.cells:
            ratio = cell.ratio
            text = f"{ratio:.2f}×" if ratio is not None else f.EMPTY
            direction = "" if ratio is None or abs(ratio - 1) < 0.02 else ("ratio-up" if ratio > 1 else "ratio-down")
            if noise.get((row.context_tokens, cell.concurrency)):
                text, direction = f"≈ {text}", "within-noise"
            cells.append({"text": text, "class": direction, "n": cell.concurrency, "a": f.tok_s(cell.a_tok_s), "b": f.tok_s(cell.b_tok_s)})
        rows.append({"label": f.context_label(row.context_tokens), "cells": cells})
    return rows


def write_listings(stage: Stage, site: Site, plan: Publication) -> None:
    """The index, one page per model and per GPU, the compare picker and the data chunks they share.

    Each listing renders its first screen of rows; its script loads the chunks to search, filter
    and sort every run.
    """
    index = site.env.get_template("index.html")
    context = site.context()
    ordered = newest_first(site.summaries)
    records = {e.id: e.record for e in site.entries}
    chunks = chunk_scripts([records[s.id] for s in ordered])
    for path, script in chunks:
        stage.write(path, script)
    models = _groups(ordered, lambda s: (s.model_slug, s.model))
    gpus = _groups(ordered, lambda s: (s.gpu_slug, s.gpu) if s.gpu_slug else None)
    urls = Urls(0)
    links = [
        {"label": "Models", "entries": [Link(urls.model(slug), name) for slug, (name, _) in models.items()]},
        {"label": "GPUs", "entries": [Link(urls.gpu(slug), name) for slug, (name, _) in gpus.items()]},
        {"label": "Capacity", "entries": [Link(urls.to(RANKING_DIR), "Rank runs by capacity at your targets")]},
    ]
    stage.write("index.html", index.render(
        urls=urls, heading="Speed test matrices", lead=_lead(ordered), rows=first_screen(ordered), total=len(ordered),
        chunks=chunk_urls(urls, len(chunks)), scope="", columns=COLUMNS, facets=facets(ordered), links=links,
        compare_url=urls.to("compare/"), unplotted=[s.model for s in ordered if s.gpu_count is None],
        **_index_figure(site), **context,
    ))
    for kind, field, groups, folder_of in (("Model", "model_slug", models, model_dir), ("GPU", "gpu_slug", gpus, gpu_dir)):
        for slug, (name, members) in groups.items():
            key = digest(site.code, site.context_key, name, msgspec.json.encode(members), str(len(chunks)))
            if plan.unchanged(folder_of(slug), key):
                continue
            group_urls = Urls(2)
            stage.write(folder_of(slug) + "index.html", index.render(
                urls=group_urls, heading=f"{name}", lead=f"{kind}: every run of {name}. {_lead(members)}",
                rows=first_screen(members), total=len(members), chunks=chunk_urls(group_urls, len(chunks)), scope=f"{field}:{slug}",
                columns=COLUMNS, facets=[], links=[], compare_url=None, unplotted=[], figure=None, figure_caption="", **context,
            ))
    picker = site.env.get_template("picker.html")
    picker_urls = Urls(1)
    stage.write("compare/index.html", picker.render(urls=picker_urls, total=len(ordered), chunks=chunk_urls(picker_urls, len(chunks)), **context))


def write_ranking(stage: Stage, site: Site, plan: Publication) -> None:
    """The ranking page: every run by capacity at one context and target, from each run's slim
    capacity record (catalog), rendered again only when a run's figures changed."""
    key = digest(site.code, site.context_key, *(e.fingerprint for e in site.entries))
    if plan.unchanged(RANKING_DIR, key):
        return
    ranking = ranking_view([decode_bundle(e.capacity) for e in site.entries])
    stage.write(RANKING_DIR + "index.html", site.env.get_template("ranking.html").render(
        urls=Urls(1), ranking=ranking, **site.context()))


def _index_figure(site: Site) -> dict[str, str | None]:
    """The index chart and its caption: every cell of every run while there are few runs, else a
    frontier line per GPU type, whose size grows with GPU types, not with runs."""
    if not site.entries:
        return {"figure": None, "figure_caption": ""}
    if len(site.entries) <= charts.MAX_RUN_TRACES:
        figure = charts.index_figure([e.bundle(site.runs) for e in site.entries])
        caption = "Every measured decode cell of every run; the line marks the frontier: the most tok/s per GPU at each speed a user sees."
    else:
        figure = charts.frontier_figure([(e.title, e.summary.gpu, e.frontier) for e in site.entries])
        caption = ("For each GPU type, the frontier of its runs: the most tok/s per GPU at each speed a user sees; "
                   "the dotted line is the frontier over all of them. Hover a point for its run and cell.")
    return {"figure": charts.figure_script_json(figure), "figure_caption": caption}


def _groups(summaries: list[RunSummary], key) -> dict[str, tuple[str, list[RunSummary]]]:
    """Summaries grouped by (slug, display name), sorted by slug."""
    groups: dict[str, tuple[str, list[RunSummary]]] = {}
    for summary in summaries:
        found = key(summary)
        if found:
            groups.setdefault(found[0], (found[1], []))[1].append(summary)
    return dict(sorted(groups.items()))


def _lead(summaries: list[RunSummary]) -> str:
    models = len({s.model_slug for s in summaries})
    gpus = len({s.gpu_slug for s in summaries if s.gpu_slug})
    return f"{plural(len(summaries), 'run')} of {plural(models, 'model')} on {plural(gpus, 'GPU type')}. Click a column to sort; every figure links to its full matrix."


def plural(count: int, noun: str) -> str:
    """"1 run", "2 runs"."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def write_content_pages(stage: Stage, site: Site) -> None:
    """content/pages/*.md in the site layout."""
    template = site.env.get_template("page.html")
    for page in site.pages:
        stage.write(page_dir(page.slug) + "index.html", template.render(urls=Urls(1), page=page, **site.context()))


def write_downloads(stage: Stage, site: Site, plan: Publication) -> None:
    """Site-wide data: runs.json, runs.csv, the bundle schema and the Atom feed of the newest runs.

    The feed reads its runs' bundles again, so it is rendered only when one of them changed.
    """
    stage.write("runs.json", exports.runs_json(site.summaries))
    stage.write("runs.csv", exports.runs_csv(site.summaries))
    stage.write("schema/bundle.schema.json", json.dumps(bundle_json_schema(), indent=2, sort_keys=True) + "\n")
    newest = max((e.measured_at for e in site.entries if e.measured_at), default=_EPOCH)
    by_id = {e.id: e for e in site.entries}
    feed_runs = [by_id[s.id] for s in newest_first(site.summaries)[:FEED_RUNS]]
    if not plan.unchanged("feed.xml", digest(site.code, newest.isoformat(), *(e.fingerprint for e in feed_runs))):
        stage.write("feed.xml", exports.atom_feed([e.bundle(site.runs) for e in feed_runs], newest))


def copy_static(stage: Stage, static: Path) -> None:
    """The stylesheet and scripts of the templates folder, plotly.js among them."""
    for source in sorted(static.rglob("*")):
        if source.is_file():
            stage.copy("static/" + source.relative_to(static).as_posix(), source)
