"""The listing pages: the index, one page per model and per GPU, and the compare picker, with the
data chunks they share.

Each listing renders its first screen of rows (index_view); its script loads the chunks to
search, filter and sort every run. Each is rendered again only when its runs changed.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from markupsafe import Markup

from sitegen.content.catalog import CACHE_DIR, Piece, RunEntry, Scanned
from sitegen.figures.gpus import output_gpu_count
from sitegen.figures.summary import RunSummary
from sitegen.pages import series_pages
from sitegen.pages.context import TITLE, Site, fingerprints, run_title, summary_of, write_page
from sitegen.pages.kinds import Kind
from sitegen.pages.verification import STATUS, STATUSES, shown_of
from sitegen.publish.swap import Publication, Stage
from sitegen.rebuild.keys import fingerprint
from sitegen.rebuild.outputs import Output
from sitegen.urls import HOME, PICKER, RANKING, Page, data_chunk, gpu_dir, model_dir
from sitegen.views import charts
from sitegen.views.index_view import (
    RunRecord,
    chunk_script,
    chunk_urls,
    chunked,
    facets,
    first_screen,
    run_record,
    shown_columns,
    sort_keys,
    sort_urls,
)
from sitegen.views.runview import fenced, isolated


def _record(run: Scanned) -> RunRecord:
    return run_record(run.shared(summary_of), run.shared(shown_of).status)


def _summary(run: Scanned) -> bytes:
    return msgspec.msgpack.encode(run.shared(summary_of))


def _record_json(run: Scanned) -> bytes:
    return msgspec.json.encode(run.shared(_record))


def _sort_keys(run: Scanned) -> bytes:
    return msgspec.msgpack.encode(sort_keys(run.shared(_record)))


def _frontier(run: Scanned) -> bytes:
    return msgspec.msgpack.encode(charts.run_frontier(run.bundle))


SUMMARY = Piece("summary", _summary)  # the run's RunSummary, as msgpack
RECORD = Piece("record", _record_json)  # its JSON record in the data chunks (index_view.run_record)
SORT_KEYS = Piece("sort_keys", _sort_keys)  # the record's place in each column's order (index_view.sort_keys)
FRONTIER = Piece("frontier", _frontier)  # its points on the index chart (charts.run_frontier)
_summary_decoder = msgspec.msgpack.Decoder(RunSummary)
_status_decoder = msgspec.msgpack.Decoder(str)
_frontier_decoder = msgspec.msgpack.Decoder(list[charts.Point])


class Link(msgspec.Struct, frozen=True):
    href: str
    text: str


def plural(count: int, noun: str) -> str:
    """"1 run", "2 runs"."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def lead(summaries: list[RunSummary]) -> str:
    """The sentence under a listing's heading: how many runs, models and GPU types it holds."""
    models = len({s.model_slug for s in summaries})
    gpus = len({s.gpu_slug for s in summaries if s.gpu_slug})
    return f"{plural(len(summaries), 'run')} of {plural(models, 'model')} on {plural(gpus, 'GPU type')}. Click a column to sort; every figure links to its full matrix."


def groups(listed: list[tuple[RunEntry, RunSummary]], key) -> dict[str, tuple[str, list[tuple[RunEntry, RunSummary]]]]:
    """Runs (with their summaries) grouped by their summary's (slug, display name), sorted by slug."""
    found: dict[str, tuple[str, list[tuple[RunEntry, RunSummary]]]] = {}
    for run in listed:
        group = key(run[1])
        if group:
            found.setdefault(group[0], (group[1], []))[1].append(run)
    return dict(sorted(found.items()))


def frontier_points(site: Site, entry: RunEntry) -> list[charts.Point]:
    """A run's points on the index chart (its FRONTIER piece)."""
    return _frontier_decoder.decode(site.piece(entry, FRONTIER))


def frontier_output(gpu: str, members: list[RunEntry]) -> Output:
    """A GPU type's frontier on a large index chart, kept in the build cache (a bookkeeping file), from its runs."""
    return Output(f"{CACHE_DIR}frontier-{fingerprint(gpu)[:16]}", fingerprints(members))


def make_frontier(stage: Stage, site: Site, gpu: str, members: list[RunEntry]) -> list[charts.Point]:
    """A GPU type's frontier (charts.runs_frontier of its runs), written to its cache file."""
    front = charts.runs_frontier([(run_title(site, e), gpu, frontier_points(site, e)) for e in members])
    stage.write(frontier_output(gpu, members).path, msgspec.msgpack.encode(front))
    return front


def gpu_frontiers(stage: Stage, site: Site, plan: Publication, by_gpu: dict[str, list[RunEntry]]) -> dict[str, list[charts.Point] | None]:
    """Each GPU type's frontier, made again only when one of its runs changed: after one run changed,
    only its GPU type's runs' points are decoded and sorted again. None for those kept, which the
    index reads back (kept_frontier) only when it is rendered."""
    return {gpu: None if plan.unchanged(frontier_output(gpu, members)) else make_frontier(stage, site, gpu, members)
            for gpu, members in by_gpu.items()}


def kept_frontier(stage: Stage, site: Site, plan: Publication, gpu: str, members: list[RunEntry]) -> list[charts.Point]:
    """A GPU type's frontier as the build cache keeps it; made again when its file cannot be read."""
    output = frontier_output(gpu, members)
    try:
        return _frontier_decoder.decode(plan.published_file(output.path).read_bytes())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        plan.forget(output.path)
        plan.unchanged(output)
        return make_frontier(stage, site, gpu, members)


def index_figure(stage: Stage, site: Site, plan: Publication, by_gpu: dict[str, list[RunEntry]],
                 made: dict[str, list[charts.Point] | None]) -> dict[str, str | None]:
    """The index chart and its caption: every cell of every run while there are few runs, else a
    frontier line per GPU type (`by_gpu`, and those `made` by gpu_frontiers), whose size grows with
    GPU types, not with runs."""
    if not site.entries:
        return {"figure": None, "figure_caption": ""}
    if not by_gpu:
        figure = charts.index_figure([e.bundle(site.runs) for e in site.entries])
        caption = "Every measured decode cell of every run; the line marks the frontier: the most tok/s per GPU at each speed a user sees."
    else:
        figure = charts.fronts_figure({gpu: kept_frontier(stage, site, plan, gpu, by_gpu[gpu]) if front is None else front for gpu, front in made.items()})
        caption = ("For each GPU type, the frontier of its runs: the most tok/s per GPU at each speed a user sees; "
                   "the dotted line is the frontier over all of them. Hover a point for its run and cell.")
    return {"figure": charts.figure_script_json(figure), "figure_caption": caption}


def write_chunks(stage: Stage, site: Site, plan: Publication, listed: list[RunEntry]) -> int:
    """The data chunks of the runs in listing order, each written only when one of its runs changed
    (a rebuild after one run changed writes the one chunk holding it); returns how many there are."""
    chunks = chunked(listed)
    for index, members in enumerate(chunks):
        if not plan.unchanged(Output(data_chunk(index), fingerprints(members))):
            stage.write(data_chunk(index), chunk_script(index, site.pieces(members, RECORD)))
    return len(chunks)


Found = dict[str, tuple[str, list[tuple[RunEntry, RunSummary]]]]  # runs grouped by slug, with the group's name (groups)


def verification_statuses(site: Site) -> dict[str, str]:
    """Each run's verification status (pages.verification), by id, from its STATUS piece."""
    return {e.id: _status_decoder.decode(piece) for e, piece in zip(site.entries, site.pieces(site.entries, STATUS))}


def write_group_pages(stage: Stage, site: Site, plan: Publication, kind: str, field: str, found: Found,
                      folder_of: Callable[[str], str], chunks: int, statuses: dict[str, str]) -> None:
    """A page per model or GPU (`kind`, its summary `field`), each rendered only when its runs changed
    (or the number of data chunks, which it links to)."""
    for slug, (name, members) in found.items():
        page = Page(folder_of(slug))
        if plan.unchanged(Output(page.file, fingerprints([e for e, _ in members]), facts=(str(chunks),), context=True)):
            continue
        summaries = [s for _, s in members]
        write_page(stage, site, "index.html", page,
                   heading=fenced(name), lead=Markup("{}: every run of {}. {}").format(kind, isolated(name), lead(summaries)), rows=first_screen(summaries, statuses.__getitem__),
                   total=len(members), chunks=chunk_urls(page.urls, chunks), sorts=sort_urls(page.urls), scope=f"{field}:{slug}", columns=shown_columns(summaries),
                   facets=[], links=[], compare_url=None, unplotted=[], figure=None, figure_caption="")


def write_index(stage: Stage, site: Site, plan: Publication, ordered: list[RunSummary], models: Found, gpus: Found, chunks: int, figure: dict[str, str | None],
                statuses: dict[str, str]) -> None:
    """The index: the newest runs' first screen (`ordered`: every run's summary in listing order), the
    filters, the links to each model's and GPU's page, and the chart (`figure`: index_figure)."""
    urls = HOME.urls
    links = [
        {"label": "Models", "entries": [Link(urls.model(slug), name) for slug, (name, _) in models.items()]},
        {"label": "GPUs", "entries": [Link(urls.gpu(slug), name) for slug, (name, _) in gpus.items()]},
        {"label": "Capacity", "entries": [Link(urls.to(RANKING.path), "Rank runs by capacity at your targets")]},
    ]
    write_page(stage, site, "index.html", HOME,
               heading="Speed test matrices", lead=lead(ordered), rows=first_screen(ordered, statuses.__getitem__), total=len(ordered),
               chunks=chunk_urls(urls, chunks), sorts=sort_urls(urls), scope="", columns=shown_columns(ordered),
               facets=facets(ordered, [status for status in STATUSES if status in statuses.values()]), links=links,
               compare_url=urls.to(PICKER.path), unplotted=[s.model for s in ordered if output_gpu_count(s.gpu_count, s.decode_gpus) is None], **figure,
               **series_pages.index_notices(stage, site, plan))


def write_listings(stage: Stage, site: Site, plan: Publication) -> None:
    """The index, the model and GPU pages, the compare picker and their data chunks (their sort orders
    are sort_orders': the build writes them apart, in its own process while the listings are written
    in another)."""
    summaries = [_summary_decoder.decode(summary) for summary in site.pieces(site.entries, SUMMARY)]
    listed = site.listing_order  # the sort orders' positions are places in this order
    by_id = {s.id: s for s in summaries}
    ordered = [by_id[e.id] for e in listed]
    chunks = write_chunks(stage, site, plan, listed)
    models = groups(list(zip(listed, ordered)), lambda s: (s.model_slug, s.model))
    gpus = groups(list(zip(listed, ordered)), lambda s: (s.gpu_slug, s.gpu) if s.gpu_slug else None)
    by_gpu = charts.by_gpu_label(site.entries, [s.gpu for s in summaries]) if len(site.entries) > charts.MAX_RUN_TRACES else {}
    made = gpu_frontiers(stage, site, plan, by_gpu)  # each declared, whether or not the index renders
    statuses = verification_statuses(site)
    if not plan.unchanged(Output(HOME.file, fingerprints(listed), context=True)):
        write_index(stage, site, plan, ordered, models, gpus, chunks, index_figure(stage, site, plan, by_gpu, made), statuses)
    write_group_pages(stage, site, plan, "Model", "model_slug", models, model_dir, chunks, statuses)
    write_group_pages(stage, site, plan, "GPU", "gpu_slug", gpus, gpu_dir, chunks, statuses)
    if not plan.unchanged(Output(PICKER.file, facts=(str(len(listed)),), context=True)):  # it shows how many runs, and loads their chunks
        write_page(stage, site, "picker.html", PICKER, total=len(ordered), chunks=chunk_urls(PICKER.urls, chunks))


KIND = Kind(name="listings", lane="beside", write=write_listings, pieces=(SUMMARY, RECORD, SORT_KEYS, FRONTIER, TITLE, STATUS))
