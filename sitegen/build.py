"""`sitegen build`: bundles in, a whole static site out, atomically and incrementally."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import jinja2
import msgspec
from markupsafe import Markup

from runner.schema import Bundle, bundle_json_schema, encode_bundle
from sitegen import charts, compare, exports, runview
from sitegen.cache import code_digest, digest
from sitegen.capacity import capacity_view, ranking_view
from sitegen.errors import InputError
from sitegen.index_view import COLUMNS, facets, newest_first
from sitegen.loader import load_bundles
from sitegen.noise import noise_sentence, within_noise
from sitegen.render import DEFAULT_TEMPLATES, make_environment, render_run_page
from sitegen.staging import Publication, Stage, staged
from sitegen.summary import RunSummary, summarize
from sitegen.tail_view import tail_view
from sitegen.text_page import render_text
from sitegen.urls import Urls, compare_file, gpu_dir, model_dir, page_dir, run_dir

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class Link(msgspec.Struct, frozen=True):
    href: str
    text: str


class Site(msgspec.Struct, kw_only=True):
    """Everything loaded for one build, shared by the page writers."""

    bundles: list[Bundle]
    summaries: list[RunSummary]
    pages: list
    pairs: list[tuple[Bundle, Bundle, str]]
    env: jinja2.Environment
    code: str
    fingerprints: dict[str, str] = {}
    views: dict[str, runview.RunView] = {}

    decode_blocks: dict[tuple[str, bool], Markup] = {}

    def view(self, bundle: Bundle) -> runview.RunView:
        """A bundle's display view, computed once per build (comparison pages reuse it)."""
        if bundle.id not in self.views:
            self.views[bundle.id] = runview.run_view(bundle)
        return self.views[bundle.id]

    def decode_block(self, bundle: Bundle, compact: bool = False) -> Markup:
        """A run's rendered Sustained decode section (`_decode.html`), rendered once per build;
        `compact` leaves out the TTFT lines so two matrices fit side by side."""
        key = (bundle.id, compact)
        if key not in self.decode_blocks:
            template = self.env.get_template("_decode.html")
            self.decode_blocks[key] = Markup(template.render(view=self.view(bundle), compact=compact))
        return self.decode_blocks[key]

    def fingerprint(self, bundle: Bundle) -> str:
        """A hash of one bundle's content, computed once per build."""
        if bundle.id not in self.fingerprints:
            self.fingerprints[bundle.id] = digest(msgspec.json.encode(bundle))
        return self.fingerprints[bundle.id]

    def context(self) -> dict:
        """Template values every page shares."""
        return {"nav_pages": self.pages}

    def context_key(self) -> str:
        """What of the shared values an output's key must cover."""
        return json.dumps([(p.slug, p.title) for p in self.pages])


def build_site(content: Path, out: Path, templates: Path | None = None) -> str:
    """Build the site from content/ into out/ and return a one-line report."""
    from sitegen.content_pages import load_pages

    started = time.perf_counter()
    templates = templates or DEFAULT_TEMPLATES
    if not (templates / "static").is_dir():
        raise InputError(templates, None, "not a templates folder (it needs the page templates and static/); check --templates")
    bundles = [bundle for _, bundle in load_bundles(runs_folder(content))]
    site = Site(
        bundles=bundles,
        summaries=[summarize(b) for b in bundles],
        pages=load_pages(content / "pages") if (content / "pages").is_dir() else [],
        pairs=compare.related_pairs(bundles),
        env=make_environment(templates),
        code=code_digest(templates),
    )
    with staged(out, [content / "runs", content / "pages", templates]) as (stage, plan):
        partners = _partners(site.pairs)
        for bundle in bundles:
            write_run(stage, site, plan, bundle, partners.get(bundle.id, []))
        for a, b, why in site.pairs:
            write_compare(stage, site, plan, a, b, why)
        write_listings(stage, site, plan)
        write_content_pages(stage, site)
        write_downloads(stage, site)
        copy_static(stage, templates / "static")
    seconds = time.perf_counter() - started
    rendered = len(plan.keys) - plan.reused
    return (
        f"built {plural(len(bundles), 'run')} and {plural(len(site.pairs), 'comparison')} into {out}/ in {seconds:.2f} s "
        f"({rendered} pages rendered, {plan.reused} unchanged and reused)"
    )


def runs_folder(content: Path) -> Path:
    """content/runs, which must exist: a mistyped --content would otherwise publish an empty site.

    An empty runs/ is fine (a first site has no runs yet).
    """
    runs = content / "runs"
    if not runs.is_dir():
        raise InputError(runs, None, "no such folder (--content should be the folder holding runs/ and pages/)")
    return runs


def _partners(pairs: list[tuple[Bundle, Bundle, str]]) -> dict[str, list[tuple[str, str, str]]]:
    """For each run, its comparison pages as (slug, other run's title, reason)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for a, b, why in pairs:
        slug = compare.compare_slug(a, b)
        found.setdefault(a.id, []).append((slug, runview.title(b), why))
        found.setdefault(b.id, []).append((slug, runview.title(a), why))
    return found


def write_run(stage: Stage, site: Site, plan: Publication, bundle: Bundle, partners: list) -> None:
    """A run's folder: the page, its plain text, bundle.json, measurements.csv and picker data."""
    folder = run_dir(bundle.id)
    context = {**site.context(), "partners": partners}
    key = digest(site.code, site.fingerprint(bundle), site.context_key(), json.dumps(partners))
    if plan.unchanged(folder, key):
        return
    view = site.view(bundle)
    figures = {name: charts.figure_script_json(fig) for name, fig in charts.run_figures(bundle).items()}
    page_context = {**context, "figures": figures, "decode_block": site.decode_block(bundle),
                    "capacity": capacity_view(bundle), "tail": tail_view(bundle)}
    stage.write(folder + "index.html", render_run_page(site.env, bundle, view, page_context))
    stage.write(folder + "index.txt", render_text(view))
    stage.write(folder + "bundle.json", encode_bundle(bundle))
    stage.write(folder + "measurements.csv", exports.measurements_csv(bundle))
    stage.write(folder + "picker.js", _picker_script(bundle, view))


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


def write_compare(stage: Stage, site: Site, plan: Publication, a: Bundle, b: Bundle, why: str) -> None:
    """A build-time comparison page: both matrices, the ratio matrix and what differs."""
    path = compare_file(compare.compare_slug(a, b))
    key = digest(site.code, site.fingerprint(a), site.fingerprint(b), why, site.context_key())
    if plan.unchanged(path, key):
        return
    template = site.env.get_template("compare.html")
    verdicts = within_noise(a, b)
    html = template.render(
        urls=Urls(1), a=a, b=b, why=why, view_a=site.view(a), view_b=site.view(b), decode_a=site.decode_block(a, compact=True), decode_b=site.decode_block(b, compact=True),
        ratios=compare_rows(a, b, verdicts), diffs=compare.field_diffs(a, b), noise=noise_sentence(verdicts),
        **site.context(),
    )
    stage.write(path, html)


def compare_rows(a: Bundle, b: Bundle, noise: dict[tuple[int, int], bool]) -> list[dict]:
    """The ratio matrix as display rows: "1.23×" and a direction class per cell; "≈" marks a
    difference within the noise of the runs' repeats."""
    from sitegen import formats as f

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
    """The index, one page per model and per GPU, and the compare picker."""
    index = site.env.get_template("index.html")
    context = site.context()
    models = _groups(site.summaries, lambda s: (s.model_slug, s.model))
    gpus = _groups(site.summaries, lambda s: (s.gpu_slug, s.gpu) if s.gpu_slug else None)
    urls = Urls(0)
    links = [
        {"label": "Models", "entries": [Link(urls.model(slug), name) for slug, (name, _) in models.items()]},
        {"label": "GPUs", "entries": [Link(urls.gpu(slug), name) for slug, (name, _) in gpus.items()]},
    ]
    stage.write("index.html", index.render(
        urls=urls, heading="Speed test matrices", lead=_lead(site.summaries), rows=newest_first(site.summaries),
        columns=COLUMNS, facets=facets(site.summaries), links=links, compare_url=urls.to("compare/"),
        figure=charts.figure_script_json(charts.index_figure(site.bundles)) if site.bundles else None,
        ranking=ranking_view(site.bundles), **context,
    ))
    for kind, groups, folder_of in (("Model", models, model_dir), ("GPU", gpus, gpu_dir)):
        for slug, (name, members) in groups.items():
            key = digest(site.code, site.context_key(), name, msgspec.json.encode(members))
            if plan.unchanged(folder_of(slug), key):
                continue
            stage.write(folder_of(slug) + "index.html", index.render(
                urls=Urls(2), heading=f"{name}", lead=f"{kind}: every run of {name}. {_lead(members)}",
                rows=newest_first(members), columns=COLUMNS, facets=[], links=[], compare_url=None, figure=None,
                ranking=None, **context,
            ))
    picker = site.env.get_template("picker.html")
    stage.write("compare/index.html", picker.render(urls=Urls(1), rows=newest_first(site.summaries), **context))


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


def write_downloads(stage: Stage, site: Site) -> None:
    """Site-wide data: runs.json, runs.csv, the bundle schema and the Atom feed."""
    stage.write("runs.json", exports.runs_json(site.summaries))
    stage.write("runs.csv", exports.runs_csv(site.summaries))
    stage.write("schema/bundle.schema.json", json.dumps(bundle_json_schema(), indent=2, sort_keys=True) + "\n")
    newest = max((b.measured_at for b in site.bundles if b.measured_at), default=_EPOCH)
    stage.write("feed.xml", exports.atom_feed(site.bundles, None, newest))


def copy_static(stage: Stage, static: Path) -> None:
    """The stylesheet and scripts of the templates folder, and plotly.js from the installed package."""
    for source in sorted(static.rglob("*")):
        if source.is_file():
            stage.copy("static/" + source.relative_to(static).as_posix(), source)
    stage.copy("static/plotly.min.js", charts.plotly_js_source())
