"""The listing pages: the index, one page per model and per GPU, and the compare picker, with the
data chunks they share.

Each listing renders its first screen of rows (index_view); its script loads the chunks to
search, filter and sort every run. A model or GPU page is rendered again only when its runs changed.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from sitegen import charts
from sitegen.cache import digest
from sitegen.catalog import CACHE_DIR, RunEntry
from sitegen.context import Site, write_page
from sitegen.index_view import (
    COLUMNS,
    DIRECTIONS,
    chunk_file,
    chunk_script,
    chunk_urls,
    chunked,
    facets,
    first_screen,
    sort_file,
    sort_orders,
    sort_script,
    sort_urls,
)
from sitegen.staging import Publication, Stage
from sitegen.summary import RunSummary
from sitegen.urls import HOME, PICKER, RANKING_DIR, Page, gpu_dir, model_dir


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


def index_figure(stage: Stage, site: Site, plan: Publication) -> dict[str, str | None]:
    """The index chart and its caption: every cell of every run while there are few runs, else a
    frontier line per GPU type, whose size grows with GPU types, not with runs."""
    if not site.entries:
        return {"figure": None, "figure_caption": ""}
    if len(site.entries) <= charts.MAX_RUN_TRACES:
        figure = charts.index_figure([e.bundle(site.runs) for e in site.entries])
        caption = "Every measured decode cell of every run; the line marks the frontier: the most tok/s per GPU at each speed a user sees."
    else:
        groups = charts.by_gpu_label(site.entries, [s.gpu for s in site.summaries])
        figure = charts.fronts_figure({gpu: gpu_frontier(stage, site, plan, gpu, members) for gpu, members in groups.items()})
        caption = ("For each GPU type, the frontier of its runs: the most tok/s per GPU at each speed a user sees; "
                   "the dotted line is the frontier over all of them. Hover a point for its run and cell.")
    return {"figure": charts.figure_script_json(figure), "figure_caption": caption}


def gpu_frontier(stage: Stage, site: Site, plan: Publication, gpu: str, members: list[RunEntry]) -> list[charts.Point]:
    """A GPU type's frontier on the index chart (charts.runs_frontier of its runs), kept in the build
    cache and keyed by its runs: after one run changed, only its GPU type's runs' points are decoded
    and sorted again (all 10,000 runs' took 80 ms). A kept file that cannot be read is made again."""
    path = f"{CACHE_DIR}frontier-{digest(gpu)[:16]}"
    key = site.runs_key(members)
    if plan.unchanged(path, key):
        try:
            return msgspec.msgpack.decode((plan.out / path).read_bytes(), type=list[charts.Point])
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            plan.forget(path)
            plan.unchanged(path, key)
    front = charts.runs_frontier([(e.title, gpu, e.frontier_points()) for e in members])
    stage.write(path, msgspec.msgpack.encode(front))
    return front


def write_chunks(stage: Stage, site: Site, plan: Publication, listed: list[RunEntry]) -> int:
    """The data chunks of the runs in listing order, each written only when one of its runs changed
    (a rebuild after one run changed writes the one chunk holding it); returns how many there are."""
    chunks = chunked(listed)
    for index, members in enumerate(chunks):
        if not plan.unchanged(chunk_file(index), site.runs_key(members)):
            stage.write(chunk_file(index), chunk_script(index, [e.record for e in members]))
    return len(chunks)


def write_sort_orders(stage: Stage, site: Site, plan: Publication) -> None:
    """Every column's orders of the listings' runs (index_view.sort_orders, positions in the data
    chunks' order: newest first). Each is written only when its positions or the runs of its first
    screen changed: after one run changed, the orders of the columns its figures moved it in, and
    those whose first screen shows it (sorting is cheap; making and writing 20 scripts is not)."""
    paths = [sort_file(column, direction) for column, _, _ in COLUMNS for direction in DIRECTIONS]
    # Every run as before (its bytes, its relations, the code), and at least one: an empty site's steady
    # set is empty too, whatever the site before it held.
    if site.entries and len(site.steady) == len(site.entries) and not plan.kept_as_before(paths):
        return
    listed = site.listing_order
    records = [e.record for e in listed]
    numerals: list[str] = []
    for order in sort_orders([e.column_keys() for e in listed]):
        shown = "".join([listed[i].fingerprint for i in order.first])
        if not plan.unchanged(order.path, digest(site.code, msgspec.msgpack.encode(order.positions), shown)):
            numerals = numerals or [str(i) for i in range(len(listed))]
            stage.write(order.path, sort_script(order, records, numerals))


def write_group_pages(stage: Stage, site: Site, plan: Publication, kind: str, field: str,
                      found: dict[str, tuple[str, list[tuple[RunEntry, RunSummary]]]], folder_of: Callable[[str], str], chunks: int) -> None:
    """A page per model or GPU (`kind`, its summary `field`), each rendered only when its runs changed."""
    for slug, (name, members) in found.items():
        page = Page(folder_of(slug))
        if plan.unchanged(page.path, digest(site.runs_key([e for e, _ in members]), site.context_key, name, str(chunks))):
            continue
        summaries = [s for _, s in members]
        write_page(stage, site, "index.html", page,
                   heading=f"{name}", lead=f"{kind}: every run of {name}. {lead(summaries)}", rows=first_screen(summaries),
                   total=len(members), chunks=chunk_urls(page.urls, chunks), sorts=sort_urls(page.urls), scope=f"{field}:{slug}", columns=COLUMNS,
                   facets=[], links=[], compare_url=None, unplotted=[], figure=None, figure_caption="")


def write_listings(stage: Stage, site: Site, plan: Publication) -> None:
    """The index, the model and GPU pages, the compare picker and their data chunks (their sort orders
    are write_sort_orders': the build writes them apart, in its own process while the listings are
    written in another)."""
    listed = site.listing_order  # the sort orders' positions are places in this order
    by_id = {s.id: s for s in site.summaries}
    ordered = [by_id[e.id] for e in listed]
    chunks = write_chunks(stage, site, plan, listed)
    models = groups(list(zip(listed, ordered)), lambda s: (s.model_slug, s.model))
    gpus = groups(list(zip(listed, ordered)), lambda s: (s.gpu_slug, s.gpu) if s.gpu_slug else None)
    urls = HOME.urls
    links = [
        {"label": "Models", "entries": [Link(urls.model(slug), name) for slug, (name, _) in models.items()]},
        {"label": "GPUs", "entries": [Link(urls.gpu(slug), name) for slug, (name, _) in gpus.items()]},
        {"label": "Capacity", "entries": [Link(urls.to(RANKING_DIR), "Rank runs by capacity at your targets")]},
    ]
    write_page(stage, site, "index.html", HOME,
               heading="Speed test matrices", lead=lead(ordered), rows=first_screen(ordered), total=len(ordered),
               chunks=chunk_urls(urls, chunks), sorts=sort_urls(urls), scope="", columns=COLUMNS, facets=facets(ordered), links=links,
               compare_url=urls.to(PICKER.path), unplotted=[s.model for s in ordered if s.gpu_count is None], **index_figure(stage, site, plan))
    write_group_pages(stage, site, plan, "Model", "model_slug", models, model_dir, chunks)
    write_group_pages(stage, site, plan, "GPU", "gpu_slug", gpus, gpu_dir, chunks)
    write_page(stage, site, "picker.html", PICKER, total=len(ordered), chunks=chunk_urls(PICKER.urls, chunks))
