"""Display rows for the run tables of the index, model and GPU pages, and their data chunks.

A listing shows its first FIRST_SCREEN rows as HTML; every run is also one small record in
the site's data chunks (`data/runs-N.js`), which the page's script loads on demand to
search, filter and sort the whole set. The HTML rows and the records are built from the same
cells, so a column is defined once, here. Each column's orderings are computed here too: its
first screen of records (`data/sort-KEY-DIRECTION.js`), a small file whatever the count, so a
first sort draws at once, and every run's place (`data/positions-KEY-DIRECTION.js`), loaded
with the chunks; the browser never compares cells itself.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import msgspec

from runner.bundle import formats as f
from sitegen.figures.summary import RunSummary
from sitegen.urls import Urls, data_chunk, positions_file, sort_file
from sitegen.views.charts import script_safe
from sitegen.views.figure_formats import significant

FIRST_SCREEN = 100  # rows a listing renders as HTML; the rest come from the data chunks
CHUNK_RUNS = 1000  # records per data chunk: about 300 KB of script

# (sort key, header, kind): kind "number" sorts numerically in the browser.
COLUMNS = (
    ("model", "Model", "text"), ("gpu", "GPU", "text"), ("engine", "Engine", "text"),
    ("quantization", "Quantization", "text"), ("date", "Date", "text"), ("max_context", "Max context", "number"),
    ("single", "Single stream tok/s", "number"), ("peak", "Peak total tok/s", "number"),
    ("per_gpu", "Peak tok/s per GPU", "number"), ("prefill_8k", "Prefill tok/s at 8K", "number"),
    ("acceptance", "Mean acceptance length", "number"), ("verification", "Verification", "text"),
)
# The column whose descending order is a listing's own (newest first, as newest_first orders): its
# header says so before any click.
LISTED_BY = "date"
_ROOT = Urls(0)  # the cells' links are relative to the site root
# Columns a listing shows only when one of its runs has the figure: a speculative decoding figure would be
# "—" in every row of most listings.
OPTIONAL_COLUMNS: dict[str, Callable[[RunSummary], bool]] = {"acceptance": lambda s: s.mean_acceptance_length is not None}


class Facet(msgspec.Struct, frozen=True):
    """A filter on the index: its field name, label and the values present."""

    name: str
    label: str
    values: list[str]


class Cell(msgspec.Struct, frozen=True):
    """One table cell: its text, the value it sorts by ("" when the run lacks it, so it sorts
    last), a site-relative link for the text, plain text after the link, and a second line."""

    text: str
    sort: str | float | int = ""
    href: str | None = None
    after: str = ""
    sub: str | None = None

    def packed(self) -> list:
        """The cell as a list for the data chunks, trailing defaults left out (runs.js reads them so)."""
        values = [self.text, self.sort, self.href, self.after, self.sub]
        while len(values) > 1 and values[-1] == _DEFAULTS[len(values) - 1]:
            values.pop()
        return values


_DEFAULTS = ("", "", None, "", None)


class RunRecord(msgspec.Struct, frozen=True):
    """One run in the data chunks: what search and filters read, and a cell per column key.

    Another column joins by adding its key to COLUMNS and its cell to `row_cells`.
    """

    id: str
    model: str
    model_slug: str
    gpu: str
    gpu_slug: str
    engine: str
    cells: dict[str, list]
    verification: str = ""  # the run's verification status (pages.verification.STATUSES), which a filter reads


class RunRow(msgspec.Struct, frozen=True):
    """One run's row: the summary and its display strings."""

    s: RunSummary
    engine: str
    date: str
    date_sort: str
    max_context: str
    single: str
    peak: str
    peak_cell: str | None
    per_gpu: str
    prefill_8k: str
    acceptance: str
    verification: str


def run_row(summary: RunSummary, verification: str = "") -> RunRow:
    """The display strings of one run's row; the peak's cell ("8K × 64") goes on a line of its own."""
    peak_cell = None
    if summary.peak_context_tokens is not None and summary.peak_concurrency is not None:
        peak_cell = f.cell_label(summary.peak_context_tokens, summary.peak_concurrency)
    return RunRow(
        s=summary,
        engine=" ".join(p for p in (summary.engine, summary.version) if p),
        date=f"{summary.measured_at:%Y-%m-%d}" if summary.measured_at else f.EMPTY,
        date_sort=summary.measured_at.isoformat() if summary.measured_at else "",
        max_context=f.context_label(summary.max_context_tokens) if summary.max_context_tokens else f.EMPTY,
        single=f.tok_s(summary.single_stream_tok_s),
        peak=f.tok_s(summary.peak_tok_s),
        peak_cell=peak_cell,
        per_gpu=f.tok_s(summary.peak_tok_s_per_gpu),
        prefill_8k=f.tok_s(summary.prefill_8k_tok_s),
        acceptance=significant(summary.mean_acceptance_length),
        verification=verification,
    )


def _number(value: float | int | None) -> float | int | str:
    return value if value is not None else ""


def row_cells(row: RunRow) -> dict[str, Cell]:
    """The cells of a run's row by column key, in COLUMNS order; links are relative to the site root."""
    s = row.s
    gpu = Cell(s.gpu, s.gpu, _ROOT.gpu(s.gpu_slug), f" ×{s.gpu_count}" if s.gpu_count else "") if s.gpu and s.gpu_slug else Cell(f.EMPTY)
    return {
        "model": Cell(s.model, s.model, _ROOT.run(s.id)),
        "gpu": gpu,
        "engine": Cell(row.engine, row.engine),
        "quantization": Cell(s.quantization or f.EMPTY, s.quantization or ""),
        "date": Cell(row.date, row.date_sort),
        "max_context": Cell(row.max_context, _number(s.max_context_tokens)),
        "single": Cell(row.single, _number(s.single_stream_tok_s)),
        "peak": Cell(row.peak, _number(s.peak_tok_s), sub=f"at {row.peak_cell}" if row.peak_cell else None),
        "per_gpu": Cell(row.per_gpu, _number(s.peak_tok_s_per_gpu)),
        "prefill_8k": Cell(row.prefill_8k, _number(s.prefill_8k_tok_s)),
        "acceptance": Cell(row.acceptance, _number(s.mean_acceptance_length)),
        "verification": Cell(row.verification or f.EMPTY, row.verification),
    }


def shown_columns(summaries: list[RunSummary]) -> tuple[tuple[str, str, str], ...]:
    """The COLUMNS a listing of these runs shows: an optional column only where one of them has its figure."""
    absent = {key for key, has in OPTIONAL_COLUMNS.items() if not any(has(s) for s in summaries)}
    return tuple(column for column in COLUMNS if column[0] not in absent)


def run_record(summary: RunSummary, verification: str = "") -> RunRecord:
    """A run's record for the data chunks, with its verification status."""
    return RunRecord(
        id=summary.id, model=summary.model, model_slug=summary.model_slug, gpu=summary.gpu or "",
        gpu_slug=summary.gpu_slug or "", engine=summary.engine,
        cells={key: cell.packed() for key, cell in row_cells(run_row(summary, verification)).items()}, verification=verification,
    )


class _Dated(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def measured_at(self) -> dt.datetime | None: ...


Dated = TypeVar("Dated", bound=_Dated)  # a run's summary or its record: what newest_first orders by


def newest_first(summaries: list[Dated]) -> list[Dated]:
    """Runs (their summaries or records) newest first, undated runs last, ties by id: the order without JavaScript."""
    dated = sorted((s for s in summaries if s.measured_at), key=lambda s: (s.measured_at, s.id), reverse=True)
    undated = sorted((s for s in summaries if not s.measured_at), key=lambda s: s.id)
    return dated + undated


def first_screen(ordered: list[RunSummary], verification: Callable[[str], str]) -> list[tuple[RunRow, dict[str, Cell]]]:
    """The rows a listing renders as HTML, with their cells; `verification` gives a run's status by its id."""
    rows = [run_row(s, verification(s.id)) for s in ordered[:FIRST_SCREEN]]
    return [(row, row_cells(row)) for row in rows]


Listed = TypeVar("Listed")


def chunked(listed: list[Listed]) -> list[list[Listed]]:
    """The listing's runs, in its default order, cut into data chunks of CHUNK_RUNS (one empty chunk when none)."""
    return [listed[start:start + CHUNK_RUNS] for start in range(0, len(listed), CHUNK_RUNS)] or [[]]


def chunk_script(index: int, records: list[bytes]) -> str:
    """A data chunk's script, of its runs' JSON records: it hands them to the page (script tags
    load from file://, unlike fetch)."""
    return f"window.speedMatrixRuns({index},[{script_safe(b','.join(records).decode())}]);\n"


def chunk_urls(urls: Urls, count: int) -> str:
    """The chunks' links from a page, space-separated for its data-chunks attribute."""
    return " ".join(urls.to(data_chunk(i)) for i in range(count))


def facets(summaries: list[RunSummary], statuses: Sequence[str]) -> list[Facet]:
    """Model, GPU, engine and verification filters with the values that occur (`statuses`: every
    verification status, in the order the filter lists them)."""
    def values(get) -> list[str]:
        return sorted({v for s in summaries if (v := get(s))}, key=str.casefold)

    return [
        Facet("model", "Model", values(lambda s: s.model)),
        Facet("gpu", "GPU", values(lambda s: s.gpu)),
        Facet("engine", "Engine", values(lambda s: s.engine)),
        Facet("verification", "Verification", list(statuses)),
    ]


DIRECTIONS = ("ascending", "descending")


SortKey = str | float | int | None  # a run's place in one column: a number, case-folded text, None without the figure


def sort_keys(record: RunRecord) -> list[SortKey]:
    """The record's sort key for each column, in COLUMNS order: computed once per run when its bundle
    is read (catalog.RunEntry), so ordering 10,000 runs compares ready keys rather than decoding cells."""
    keys: list[SortKey] = []
    for key, _, _ in COLUMNS:
        cell = record.cells[key]
        value = cell[1] if len(cell) > 1 else ""  # a packed cell leaves out an empty sort value
        keys.append(None if value == "" else value.casefold() if isinstance(value, str) else value)
    return keys


def orderings(keys: list[SortKey]) -> tuple[list[int], list[int]]:
    """The positions of one column's keys in ascending and in descending order: numbers by value, text
    by its case-folded form, ties and runs without the figure (always last) in the keys' own order."""
    absent = [i for i, k in enumerate(keys) if k is None] if None in keys else []
    valued = [i for i, k in enumerate(keys) if k is not None] if absent else range(len(keys))
    by_key = keys.__getitem__
    ascending = sorted(valued, key=by_key)
    descending = sorted(ascending, key=by_key, reverse=True)  # stable, so ties stay in order; sorted input sorts faster
    return ascending + absent, descending + absent


class Order(msgspec.Struct, frozen=True):
    """One column's ordering in one direction: its two files and every run's position in the chunks' order."""

    path: str  # the first screen's script
    positions_path: str  # the positions' script
    name: str  # "peak-descending", as the page's script knows it
    positions: list[int]

    @property
    def first(self) -> list[int]:
        """The positions of the order's first screen, whose records its script carries."""
        return self.positions[:FIRST_SCREEN]


def sort_orders(keys: list[list[SortKey]]) -> list[Order]:
    """Each column's order in each direction; `keys` are each run's sort_keys, in the listing's order."""
    return [Order(sort_file(key, direction), positions_file(key, direction), f"{key}-{direction}", order)
            for index, (key, _, _) in enumerate(COLUMNS)
            for direction, order in zip(DIRECTIONS, orderings([k[index] for k in keys]))]


def sort_script(order: Order, records: list[bytes]) -> str:
    """An order's first screen of records, and where its positions are (a site path)."""
    first = script_safe(b",".join([records[i] for i in order.first]).decode())
    return f'window.speedMatrixFirstScreen("{order.name}",[{first}],"{order.positions_path}");\n'


def positions_script(order: Order, numerals: list[str]) -> str:
    """Every run's position in the order (`numerals`: the positions as text, made once for all orders)."""
    return f'window.speedMatrixPositions("{order.name}",[{",".join(map(numerals.__getitem__, order.positions))}]);\n'


def sort_urls(urls: Urls) -> dict[str, str]:
    """Each column's two orderings' links from a page, space-separated (ascending first) for its header."""
    return {key: " ".join(urls.to(sort_file(key, d)) for d in DIRECTIONS) for key, _, _ in COLUMNS}
