"""`sitegen build`: bundles in, a whole static site out, atomically and incrementally.

This module only orchestrates: it reads the runs (catalog), then has each kind of output the
registry lists written in its lane, while the others are: the "beside" kinds in a forked process,
the "workers" kinds' tasks across the render workers, the "main" kinds in this process meanwhile;
then the build cache, and the stage is published (publish.swap).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from sitegen.content.catalog import (
    BundleFile,
    Cache,
    Piece,
    RunEntry,
    bundle_files,
    new_cache,
    piece_positions,
    read_cache,
    related_pairs,
    relations_fingerprint,
    scan,
    steady_runs,
    write_cache,
)
from sitegen.content.markdown import load_pages
from sitegen.errors import InputError
from sitegen.pages import registry
from sitegen.pages.context import Site
from sitegen.pages.kinds import Lane
from sitegen.pages.listings import plural
from sitegen.pages.render import DEFAULT_TEMPLATES, make_environment
from sitegen.pages.run_pages import Renderer, render_pages
from sitegen.pages.verification import Settled, consistent, settled_entries, write_settled
from sitegen.publish.stage import Stage
from sitegen.publish.swap import staged
from sitegen.rebuild.keys import code_digest, collector_paused
from sitegen.rebuild.outputs import Shared
from sitegen.rebuild.plan import Publication, Recorded, recorded
from sitegen.serve import memo
from sitegen.support import phases
from sitegen.support.parallel import Beside, cpu_count
from sitegen.support.phases import phase
from sitegen.support.progress import Progress


def build_site(content: Path, out: Path, templates: Path | None = None, jobs: int | None = None, progress: Progress | None = None,
               strict: bool = False) -> str:
    """Build the site from content/ into out/ and return a one-line report.

    Pages are rendered by `jobs` worker processes (default: one per core); `progress`
    shows how far a long build is on a terminal; `strict` leaves out the runs the checker finds inconsistent. Every output is written when the lanes are done, at
    the end of the `staged` block, and nothing is published yet: the place for checks of the new site.
    """
    started = time.perf_counter()
    progress = progress or Progress()
    templates = templates or DEFAULT_TEMPLATES
    if not (templates / "static").is_dir():
        raise InputError(templates, None, "not a templates folder (it needs the page templates and static/); check --templates")
    runs = runs_folder(content)
    jobs = jobs or cpu_count()
    pieces = registry.pieces()
    with phase("code digest"):
        code = code_digest(templates)
    try:
        # The bundle files are listed in a forked process from the start; the stage is taken next: the
        # site before last, kept beside the site, is checked in another while this one reads the runs.
        with bundle_files_beside(runs, jobs) as listed, staged(out, [content / "runs", content / "pages", templates]) as (stage, plan):
            cache, entries = read_runs(runs, plan.state, code, pieces, listed, jobs, progress)
            gc.freeze()  # the run records live to the end: keep the collector (and forked workers' pages) off them
            with phase("verification"), collector_paused():  # settling makes many objects and no cycles
                entries, settled = settled_entries(runs, entries, pieces, plan.state, code)
                built = consistent(entries, piece_positions(pieces)) if strict else entries
                left_out, entries = len(entries) - len(built), built
            with phase("content pages, steady runs"):
                relations = relations_fingerprint(entries)
                site = Site(
                    runs=runs,
                    entries=entries,
                    pages=load_pages(content / "pages", cache.pages) if (content / "pages").is_dir() else [],
                    pairs=[],  # chosen below, once the beside kinds have started: they read the runs, not the pairs
                    env=make_environment(templates),
                    code=code,
                    templates=templates,
                    positions=piece_positions(pieces),
                )
                site.steady = steady_runs(entries, cache, relations, site.context_key)
                plan.shared = Shared(code, site.context_key)
            with beside_lane(stage, site, plan, jobs) as beside:  # stopped if the build fails first
                with phase("pairs"):
                    site.pairs = related_pairs(entries, cache, relations)
                cached: dict[str, object] = {}
                # The main kinds and the cache are written while the workers render (this process only waits for them).
                render_workers(stage, site, plan, jobs, progress,
                               meanwhile=lambda: cached.update(write_main(stage, site, plan, cache, relations, pieces, settled)))
                with phase("beside (waited for)"):
                    plan.add(stage, written_beside(beside))
        for path, value in cached.items():
            memo.remember(plan.published_file(path), value)
    finally:
        gc.unfreeze()  # (nothing was frozen when the build failed before its runs were read)
        progress.close()
        phases.report()
    seconds = time.perf_counter() - started
    rendered = len(plan.keys) - plan.reused
    return (
        f"built {plural(len(entries), 'run')} and {plural(len(site.pairs), 'comparison')} into {out}/ in {seconds:.2f} s "
        f"({rendered} outputs rendered, {plan.reused} unchanged and reused)"
        + (f"; left out {plural(left_out, 'inconsistent run')} (--strict)" if strict else "")
    )


def write_lane(stage: Stage, site: Site, plan: Publication, lane: Lane) -> None:
    """Each kind of the lane ("beside" or "main") writes its outputs whose inputs changed."""
    for kind in registry.in_lane(lane):
        with phase(kind.name):
            kind.write(stage, site, plan)  # type: ignore[misc]  (a kind of these lanes has one: Kind.__post_init__)


def render_workers(stage: Stage, site: Site, plan: Publication, jobs: int, progress: Progress, meanwhile: Callable[[], None]) -> None:
    """The "workers" kinds' outputs whose inputs changed, rendered across `jobs` processes; `meanwhile()`
    runs in this process while they render."""
    with phase("plan pages (keys)"):
        tasks = [task for kind in registry.in_lane("workers") for task in kind.plan(site, plan)]  # type: ignore[misc]
    progress.start("rendering pages", len(tasks))
    with phase("render pages"):
        render_pages(stage, Renderer(site, stage, registry.renders()), tasks, jobs, progress, meanwhile)


def write_main(stage: Stage, site: Site, plan: Publication, cache: Cache, relations: str, pieces: Sequence[Piece],
               settled: Settled) -> dict[str, object]:
    """The "main" kinds' outputs, then the build cache and what settling found; returns the cache files'
    values by their paths in the plan (write_cache)."""
    with collector_paused():  # the site-wide outputs decode and sort every run's record: many objects, no cycles
        write_lane(stage, site, plan, "main")
        with phase("write cache"):
            write_settled(stage, plan, settled)
            done = new_cache(site.entries, site.pairs, site.code, relations, site.context_key, site.pages, [p.name for p in pieces])
            return write_cache(stage, plan, done, cache.unreadable)


def bundle_files_beside(runs: Path, jobs: int) -> Beside:
    """The bundle files, listed and stat-ed in a forked process while this one takes the stage and reads
    the cache; msgpack of a list of BundleFile."""
    return Beside(lambda: msgspec.msgpack.encode(bundle_files(runs)), fork=jobs > 1)


def read_runs(runs: Path, state: Path, code: str, pieces: Sequence[Piece], listed: Beside, jobs: int,
              progress: Progress) -> tuple[Cache, list[RunEntry]]:
    """The previous build's cache (in its state folder), and a record per bundle file (`listed`:
    bundle_files_beside's) with its `pieces`, decoded only for files not in it. The collector is held
    off, as reading makes 10,000s of objects and no cycles."""
    with collector_paused():
        with phase("read cache"):
            cache = read_cache(state, code, [p.name for p in pieces])
        with phase("bundle files (waited for)"):
            files = msgspec.msgpack.decode(listed.result(), type=list[BundleFile])
        with phase("scan bundles"):
            progress.start("reading bundles", len(files))
            return cache, scan(runs, cache.by_name(), jobs, progress.advance, files, pieces)


def beside_lane(stage: Stage, site: Site, plan: Publication, jobs: int) -> Beside:
    """The "beside" kinds (the ranking, the listings) written in a forked process while this one chooses
    the comparison pairs (which they do not read), plans and renders the other outputs; what they wrote
    and keyed comes back as msgpack, with their phases, for this process to record. In this process
    with one job."""

    def run() -> bytes:
        since = phases.mark()
        with collector_paused():
            done = recorded(stage, plan, lambda: write_lane(stage, site, plan, "beside"))
        return msgspec.msgpack.encode((done, phases.taken(since)))

    stage.kept  # the kept stage's check is settled here, not in the forked process
    return Beside(run, fork=jobs > 1)


def written_beside(beside: Beside) -> Recorded:
    """What the beside process wrote and keyed, once it is done; its phases join this process's."""
    done, times = msgspec.msgpack.decode(beside.result(), type=tuple[Recorded, list[phases.Timed]])
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
