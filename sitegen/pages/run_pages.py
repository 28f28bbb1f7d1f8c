"""Run folders and comparison pages: planned from what changed, rendered one bundle at a time, in
forked workers (one per core, sitegen.support.parallel) when there are enough of them.

Memory stays bounded whatever the number of runs: a renderer keeps only its last few bundles,
their views and their rendered decode sections, since a run's comparisons follow its page.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import msgspec
from markupsafe import Markup

from runner.bundle.schema import Bundle, encode_bundle_compact
from sitegen.content.catalog import RunEntry
from sitegen.content.loader import decode_bundle_file, decode_clean, read_input
from sitegen.figures import compare
from sitegen.pages import exports, series_pages
from sitegen.pages.cell_texts import matrix_texts
from sitegen.pages.context import TITLE, Site, run_title, write_page
from sitegen.pages.kinds import Kind, Task
from sitegen.pages.render import render_run_page
from sitegen.pages.text_page import render_text
from sitegen.pages.verification import CLAIM, SHOWN, Verification, shown
from sitegen.publish.swap import Publication, Stage
from sitegen.rebuild.keys import collector_paused, fingerprint
from sitegen.rebuild.outputs import Output
from sitegen.support.parallel import fork_map
from sitegen.support.progress import Progress
from sitegen.urls import Page, compare_file, run_dir, run_file
from sitegen.views import charts, runview
from sitegen.views.capacity_view import capacity_view
from sitegen.views.compare_view import compare_page, picker_script
from sitegen.views.serving_view import serving_view
from sitegen.views.tail_view import tail_view

WORKER_CHUNK = 512  # the most render tasks a worker takes at a time (fewer near the end): consecutive tasks share bundles
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _partners(site: Site, slugs: list[str], wanted: set[str]) -> dict[str, list[tuple[str, str, str]]]:
    """For each wanted run, its comparison pages as (slug, other run's title, reason)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for (a, b, why), slug in zip(site.pairs, slugs):
        if a.id in wanted:
            found.setdefault(a.id, []).append((slug, run_title(site, b), why))
        if b.id in wanted:
            found.setdefault(b.id, []).append((slug, run_title(site, a), why))
    return found


def _render_order(entry: RunEntry) -> tuple:
    """Where a run's tasks come: by setup (its comparison keys, as text: parts may be None), then date."""
    keys = entry.keys
    return (keys.model, str(keys.hardware), str(keys.engine), entry.measured_at or _EPOCH, entry.id)


def plan_pages(site: Site, plan: Publication) -> list[Task]:
    """The run folders and comparison pages whose inputs changed, as render tasks: ("run", bundle
    path, partners, what it shows of its series or None: made here, in one process, and only for
    the pages rendered) or ("compare", baseline path, other path, reason).

    Runs come by setup (model, hardware, engine), then date, each followed by the comparisons
    it is the baseline of: most partners are reruns of the same setup nearest in time, so a
    worker taking tasks in order finds both bundles of a comparison among those it has just
    read (far fewer bundle reads than in model-then-date order).
    Only the tasks are put in that order: a rebuild after one bundle has a few, not 25,000.
    The outputs of steady runs (site.steady) keep the previous build's keys, unhashed: a run folder
    while neither its run nor a partner (whose title it lists) changed, a comparison while neither run did.
    """
    slugs = [compare.compare_slug(a, b) for a, b, _ in site.pairs]
    changed = {e.id for e in site.entries if e.id not in site.steady}
    touched = changed | {run.id for a, b, _ in site.pairs if a.id in changed or b.id in changed for run in (a, b)}
    touched |= series_pages.members_with(site, changed)  # a run's page links its series, the newest's shows its notices
    runs = [(run_dir(e.id), e) for e in site.entries]
    comparisons = [(compare_file(slug), pair) for slug, pair in zip(slugs, site.pairs)]
    again = plan.kept_as_before([output for output, e in runs if e.id not in touched] +
                                [output for output, (a, b, _) in comparisons if a.id not in changed and b.id not in changed])
    keyed = {e.id for output, e in runs if e.id in touched or output in again}
    partners = _partners(site, slugs, keyed)
    places = series_pages.run_places(site, keyed)
    planned: list[tuple[RunEntry, int, Task]] = []
    for output, entry in runs:
        if entry.id in keyed:
            mine = partners.get(entry.id, [])  # it lists its comparisons, by their partners' titles
            place = places.get(entry.id)
            facts = (msgspec.json.encode(mine),) + ((msgspec.json.encode(place),) if place else ())
            bundles = (entry.fingerprint, *series_pages.place_bundles(site, place))
            if not plan.unchanged(Output(output, bundles, facts=facts, context=True)):
                mark = series_pages.run_mark(site, place) if place else None
                planned.append((entry, 0, ("run", str(site.runs / entry.name), mine, mark)))
    for output, (a, b, why) in comparisons:
        if a.id in changed or b.id in changed or output in again:
            if not plan.unchanged(Output(output, (a.fingerprint, b.fingerprint), facts=(why,), context=True)):
                planned.append((a, 1, ("compare", str(site.runs / a.name), str(site.runs / b.name), why)))
    planned.sort(key=lambda item: (_render_order(item[0]), item[1]))  # stable: a baseline's comparisons keep the pairs' order
    return [task for _, _, task in planned]


class Loaded:
    """A bundle a renderer read and its views: the page's and its serving panels'."""

    __slots__ = ("bundle", "view", "serving")

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.view = runview.run_view(bundle)
        self.serving = serving_view(bundle)


class Renderer:
    """Renders the tasks of the "workers" kinds into the stage, in this process or a worker, each by its
    render in `renders` (Kind.renders), with the bundles it read last."""

    KEEP = 64

    def __init__(self, site: Site, stage: Stage, renders: dict[str, Callable[..., None]]) -> None:
        self.site = site
        self.stage = stage
        self.renders = renders
        self.loaded: OrderedDict[str, Loaded] = OrderedDict()

    @functools.cached_property
    def by_name(self) -> dict[str, RunEntry]:
        """The runs' records by bundle file name: made in each worker when it first renders, without a path for each run."""
        return {e.name: e for e in self.site.entries}

    def verification(self, path: str) -> Verification:
        """What the run's page says of its verification, from its SHOWN piece (its key covers it: the run's
        fingerprint covers the files beside its bundle, and a run that settling changed gets another)."""
        return shown(self.site.piece(self.by_name[Path(path).name], SHOWN))

    def render(self, task: Task) -> dict[str, int]:
        """Render one task into the stage; returns the site paths it wrote with their inodes, for the
        caller to record (a worker's stage is its own copy)."""
        recorded, self.stage.written = self.stage.written, {}
        try:
            self.renders[task[0]](self, *task[1:])
            return self.stage.written
        finally:
            self.stage.written = recorded

    def load(self, path: str) -> Loaded:
        """A bundle, its view and its decode sections by compactness, read once while recent."""
        if path in self.loaded:
            self.loaded.move_to_end(path)
        else:
            data = read_input(Path(path))
            # The bytes the scan read and found clean (by hash) decode alone; any others are checked and scrubbed.
            entry = self.by_name.get(Path(path).name)
            clean = entry is not None and entry.clean and entry.fingerprint == fingerprint(data)
            bundle = decode_clean(data) if clean else decode_bundle_file(Path(path), data)
            self.loaded[path] = Loaded(bundle)
            if len(self.loaded) > self.KEEP:
                self.loaded.popitem(last=False)
        return self.loaded[path]

    def decode_block(self, view: runview.RunView) -> Markup:
        """A run's rendered Sustained decode section (`_decode.html`)."""
        return Markup(self.site.env.get_template("_decode.html").render(view=view, body=matrix_texts(view.matrix)))

    def run(self, path: str, partners: list, mark: series_pages.RunMark | None = None) -> None:
        """A run's folder: the page, its plain text, bundle.json, measurements.csv and picker data."""
        loaded = self.load(path)
        bundle, view = loaded.bundle, loaded.view
        page = Page(run_dir(bundle.id))
        chart_data = charts.run_chart_data(bundle)
        context = {**self.site.context(page), "partners": partners, "charts": chart_data,
                   "chart_json": charts.figure_script_json(chart_data), "decode_block": self.decode_block(view),
                   "capacity": capacity_view(bundle), "tail": tail_view(bundle), "serving": loaded.serving,
                   "series_mark": mark}
        context["verification"] = self.verification(path)
        self.stage.write(page.file, render_run_page(self.site.env, bundle, view, context))
        self.stage.write(run_file(bundle.id, "index.txt"), render_text(view, loaded.serving, context["verification"]))
        self.stage.write(run_file(bundle.id, "bundle.json"), encode_bundle_compact(bundle))
        self.stage.write(run_file(bundle.id, "measurements.csv"), exports.measurements_csv(bundle))
        self.stage.write(run_file(bundle.id, "picker.js"), picker_script(bundle, view))

    def compare(self, path_a: str, path_b: str, why: str) -> None:
        """A build-time comparison page: the ratio matrix with both runs' figures, and what differs."""
        (a, view_a), (b, view_b) = [(loaded.bundle, loaded.view) for loaded in (self.load(path_a), self.load(path_b))]
        write_page(self.stage, self.site, "compare.html", Page(compare_file(compare.compare_slug(a, b))),
                   **compare_page(a, b, why, (view_a, view_b)))


def render_pages(stage: Stage, renderer: Renderer, tasks: list[Task], jobs: int, progress: Progress,
                 meanwhile: Callable[[], None] = lambda: None) -> None:
    """Render every task, across `jobs` forked processes when there are enough of them; `meanwhile()`
    runs in this process while they render (fork_map). The workers are forked with the cyclic
    collector off, which rendering has no use for: its pages, views and bundles make no cycles."""
    with collector_paused():
        for written in fork_map(renderer.render, tasks, jobs, WORKER_CHUNK, ordered=False, meanwhile=meanwhile):
            stage.written.update(written)
            progress.advance()


KIND = Kind(name="run pages", lane="workers", plan=plan_pages, renders={"run": Renderer.run, "compare": Renderer.compare}, pieces=(TITLE, CLAIM, SHOWN))
