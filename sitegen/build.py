"""`sitegen build`: bundles in, a whole static site out, atomically and incrementally.

This module only orchestrates: it reads the runs (catalog), plans and renders the run folders
and comparisons (run_pages), the listings (listings) and the site-wide pages and downloads here.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from runner.bundle.schema import bundle_json_schema
from sitegen import exports, memo, phases
from sitegen.cache import code_digest, collector_paused, digest
from sitegen.capacity import (
    RankingView,
    Standing,
    ranking_chunks,
    ranking_script,
    ranking_view,
)
from sitegen.catalog import (
    BundleFile,
    Cache,
    RunEntry,
    bundle_files,
    new_cache,
    read_cache,
    related_pairs,
    relations_digest,
    scan,
    steady_runs,
    write_cache,
)
from sitegen.content_pages import load_pages
from sitegen.context import Site, write_page
from sitegen.errors import InputError
from sitegen.listings import plural, write_listings, write_sort_orders
from sitegen.parallel import Beside, cpu_count
from sitegen.phases import phase
from sitegen.progress import Progress
from sitegen.render import DEFAULT_TEMPLATES, make_environment
from sitegen.run_pages import Renderer, plan_pages, render_pages
from sitegen.staging import Publication, Recorded, Stage, recorded, staged
from sitegen.urls import RANKING, Page, page_dir

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
FEED_RUNS = 100  # the feed carries the newest runs only: readers want what is new, not the archive


def build_site(content: Path, out: Path, templates: Path | None = None, jobs: int | None = None, progress: Progress | None = None) -> str:
    """Build the site from content/ into out/ and return a one-line report.

    Pages are rendered by `jobs` worker processes (default: one per core); `progress`
    shows how far a long build is on a terminal.
    """
    started = time.perf_counter()
    progress = progress or Progress()
    templates = templates or DEFAULT_TEMPLATES
    if not (templates / "static").is_dir():
        raise InputError(templates, None, "not a templates folder (it needs the page templates and static/); check --templates")
    runs = runs_folder(content)
    jobs = jobs or cpu_count()
    with phase("code digest"):
        code = code_digest(templates)
    try:
        # The bundle files are listed in a forked process from the start; the stage is taken next: the
        # site before last, kept beside the site, is checked in another while this one reads the runs.
        with bundle_files_beside(runs, jobs) as listed, staged(out, [content / "runs", content / "pages", templates]) as (stage, plan):
            cache, entries = read_runs(runs, out, code, listed, jobs, progress)
            gc.freeze()  # the run records live to the end: keep the collector (and forked workers' pages) off them
            with phase("content pages, steady runs"):
                relations = relations_digest(entries)
                site = Site(
                    runs=runs,
                    entries=entries,
                    pages=load_pages(content / "pages", cache.pages) if (content / "pages").is_dir() else [],
                    pairs=[],  # chosen below, once the listings have started: they read the runs, not the pairs
                    env=make_environment(templates),
                    code=code,
                )
                site.steady = steady_runs(entries, cache, relations, site.context_key)
            with listings_beside(stage, site, plan, jobs) as listings:  # stopped if the build fails first
                with phase("pairs"):
                    site.pairs = related_pairs(entries, cache, relations)
                cached: dict[str, object] = {}
                # The site-wide pages are written while the workers render (this process only waits for them).
                write_run_pages(stage, site, plan, jobs, progress,
                                meanwhile=lambda: cached.update(write_site_pages(stage, site, plan, templates, cache, relations)))
                with phase("listings (waited for)"):
                    plan.add(stage, listings_written(listings))
        for path, value in cached.items():
            memo.remember(out / path, value)
    finally:
        gc.unfreeze()  # (nothing was frozen when the build failed before its runs were read)
        progress.close()
        phases.report()
    seconds = time.perf_counter() - started
    rendered = len(plan.keys) - plan.reused
    return (
        f"built {plural(len(entries), 'run')} and {plural(len(site.pairs), 'comparison')} into {out}/ in {seconds:.2f} s "
        f"({rendered} outputs rendered, {plan.reused} unchanged and reused)"
    )


def write_run_pages(stage: Stage, site: Site, plan: Publication, jobs: int, progress: Progress, meanwhile: Callable[[], None]) -> None:
    """The run folders and comparison pages whose inputs changed, across `jobs` processes; `meanwhile()`
    runs in this process while they render."""
    with phase("plan pages (keys)"):
        tasks = plan_pages(site, plan)
    progress.start("rendering pages", len(tasks))
    with phase("render pages"):
        render_pages(stage, Renderer(site, stage), tasks, jobs, progress, meanwhile)


def write_site_pages(stage: Stage, site: Site, plan: Publication, templates: Path, cache: Cache, relations: str) -> dict[str, object]:
    """The content pages, the listings' sort orders, the downloads, the static files and the build
    cache; returns the cache files' values by site path (write_cache)."""
    with collector_paused():  # the site-wide pages decode and sort every run's record: many objects, no cycles
        with phase("content pages"):
            write_content_pages(stage, site)
        with phase("sort orders"):
            write_sort_orders(stage, site, plan)
        with phase("downloads"):
            write_downloads(stage, site, plan)
        with phase("static"):
            copy_static(stage, plan, templates / "static", site.code)
        with phase("write cache"):
            done = new_cache(site.entries, site.pairs, site.code, relations, site.context_key, site.pages)
            return write_cache(stage, plan, done, cache.unreadable)


def bundle_files_beside(runs: Path, jobs: int) -> Beside:
    """The bundle files, listed and stat-ed in a forked process (10,000 stats: 60 ms) while this one
    takes the stage and reads the cache; msgpack of a list of BundleFile."""
    return Beside(lambda: msgspec.msgpack.encode(bundle_files(runs)), fork=jobs > 1)


def read_runs(runs: Path, out: Path, code: str, listed: Beside, jobs: int, progress: Progress) -> tuple[Cache, list[RunEntry]]:
    """The previous build's cache, and a record per bundle file (`listed`: bundle_files_beside's) decoded only
    for files not in it. The collector is held off, as reading makes 10,000s of objects and no cycles
    (one collection over the cache was 80 ms)."""
    with collector_paused():
        with phase("read cache"):
            cache = read_cache(out, code)
        with phase("bundle files (waited for)"):
            files = msgspec.msgpack.decode(listed.result(), type=list[BundleFile])
        with phase("scan bundles"):
            progress.start("reading bundles", len(files))
            return cache, scan(runs, cache.by_name(), jobs, progress.advance, files)


def listings_beside(stage: Stage, site: Site, plan: Publication, jobs: int) -> Beside:
    """The ranking and the listings written in a forked process while this one chooses the comparison
    pairs (which they do not read), plans and renders the other pages (the two halves of a rebuild's
    work about even at 10,000 runs); what they wrote and
    keyed comes back as msgpack, with their phases, for this process to record. In this process with
    one job."""

    def write() -> None:
        with phase("ranking"):
            write_ranking(stage, site, plan)
        with phase("listings"):
            write_listings(stage, site, plan)

    def run() -> bytes:
        since = phases.mark()
        with collector_paused():
            done = recorded(stage, plan, write)
        return msgspec.msgpack.encode((done, phases.taken(since)))

    stage.kept  # the kept stage's check is settled here, not in the forked process
    return Beside(run, fork=jobs > 1)


def listings_written(listings: Beside) -> Recorded:
    """What the listings process wrote and keyed, once it is done; its phases join this process's."""
    done, times = msgspec.msgpack.decode(listings.result(), type=tuple[Recorded, list[tuple[str, float, float]]])
    phases.add(times, "beside")
    return done


def runs_folder(content: Path) -> Path:
    """content/runs, which must exist: a mistyped --content would otherwise publish an empty site.

    An empty runs/ is fine (a first site has no runs yet).
    """
    runs = content / "runs"
    if not runs.is_dir():
        raise InputError(runs, None, "no such folder (--content should be the folder holding runs/ and pages/)")
    return runs


def first_ranked(by_id: list[RunEntry]) -> RankingView | None:
    """The ranking's first screen, from each run's standing made when its bundle was read."""
    return ranking_view(msgspec.json.decode(b"[" + b",".join(e.standing for e in by_id) + b"]", type=list[Standing]))


def write_ranking(stage: Stage, site: Site, plan: Publication) -> None:
    """The ranking page: its first screen of runs by capacity at one context and target, and the data
    chunks its script ranks every run with, from each run's records made when its bundle was read
    (catalog: its standing at the page's own target and its chunk record). Each chunk is written only
    when one of its runs changed, the page when any did."""
    chunks = []
    for index, members in enumerate(ranking_chunks(site.by_id)):
        chunks.append(path := f"{RANKING.path}runs-{index}.js")
        if not plan.unchanged(path, site.runs_key(members)):
            stage.write(path, ranking_script(index, [e.ranked for e in members]))
    if plan.unchanged(RANKING.path, digest(site.runs_key(site.entries), site.context_key)):
        return
    write_page(stage, site, "ranking.html", RANKING, ranking=first_ranked(site.by_id), chunks=" ".join(RANKING.urls.to(path) for path in chunks))


def write_content_pages(stage: Stage, site: Site) -> None:
    """content/pages/*.md in the site layout."""
    for page in site.pages:
        write_page(stage, site, "page.html", Page(page_dir(page.slug)), page=page)


def write_downloads(stage: Stage, site: Site, plan: Publication) -> None:
    """Site-wide data: runs.json, runs.csv, the bundle schema and the Atom feed of the newest runs."""
    write_run_lists(stage, site, plan)
    if not plan.unchanged("schema/bundle.schema.json", site.code):  # the schema is the code's own
        stage.write("schema/bundle.schema.json", json.dumps(bundle_json_schema(), indent=2, sort_keys=True) + "\n")
    write_feed(stage, site, plan)


def write_run_lists(stage: Stage, site: Site, plan: Publication) -> None:
    """runs.json and runs.csv: each run's record and line, made when its bundle was read (catalog),
    joined in id order; written only when a run's bundle changed (its bytes, with the code, decide
    its summary)."""
    key = site.runs_key(site.entries)
    if not all([plan.unchanged(path, key) for path in ("runs.json", "runs.csv")]):  # a list: both keys recorded
        stage.write_pieces("runs.json", exports.runs_json([e.listed_json for e in site.by_id]))
        stage.write_pieces("runs.csv", exports.runs_csv([e.listed_csv for e in site.by_id]))


def write_feed(stage: Stage, site: Site, plan: Publication) -> None:
    """The Atom feed of the newest runs; it reads their bundles again, so it is rendered only when one
    of them changed (or another run became one of them)."""
    feed_runs = site.listing_order[:FEED_RUNS]
    newest = feed_runs[0].measured_at if feed_runs and feed_runs[0].measured_at else _EPOCH  # newest first: the latest date
    if not plan.unchanged("feed.xml", digest(site.runs_key(feed_runs), newest.isoformat())):
        stage.write("feed.xml", exports.atom_feed([e.bundle(site.runs) for e in feed_runs], newest))


def copy_static(stage: Stage, plan: Publication, static: Path, code: str) -> None:
    """The stylesheet and scripts of the templates folder, plotly.js among them; copied only when the
    templates changed (the code digest covers them)."""
    for source in sorted(static.rglob("*")):
        path = "static/" + source.relative_to(static).as_posix()
        if source.is_file() and not plan.unchanged(path, code):
            stage.copy(path, source)
