"""Downloads of the published site: a run's measurements as CSV, the run list as JSON/CSV, an Atom feed.

Every export is deterministic (same input, same bytes) and carries raw
numbers, not display strings, so people can compute with them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Sequence

import msgspec

from runner.bundle.display import status_slug
from runner.bundle.formats import cell_label, tok_s
from runner.bundle.schema import STATUSES, Bundle, DecodeCell, PrefillPoint
from runner.bundle.terminal_text import printable
from sitegen.figures.serving import given, valid_energy
from sitegen.figures.summary import RunSummary, peak_cell, valued_cells
from sitegen.support.fastjson import number_texts
from sitegen.urls import Urls
from sitegen.views.runview import sorted_decode, sorted_prefill, summary_engine, title

MEASUREMENT_COLUMNS = (
    "phase", "context_tokens", "concurrency", "status", "total_tok_s", "per_request_tok_s", "ttft_ms",
    "tbt_ms", "avg_active", "completed", "output_tokens", "measured_s", "error",
    # Speculative decoding and energy, after the columns readers had, in every file (empty where a cell
    # has none), so that a script reads every run's file alike. An invalid energy reading has no figures.
    "acceptance_rate", "mean_acceptance_length", "joules_per_output_token", "joules_per_token", "mean_watts_per_gpu",
    "energy_valid",
)
TEXT_COLUMNS = frozenset({"phase", "status", "error", "energy_valid"})  # the others hold numbers
_NO_SERVING = (None,) * 6  # a row's speculative and energy columns where it has neither
# Spreadsheets run a cell starting with these as a formula (OWASP "CSV injection"); a leading
# space, line break or NUL is dropped by some of them, so a formula could hide behind it.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", " ", "\x00")
ATOM_NS = "http://www.w3.org/2005/Atom"
TAG_PREFIX = "tag:speed-matrix,2026:runs/"
FEED_TITLE = "Speed test matrices"
PIECE_RUNS = 1000  # runs.json and runs.csv are written this many runs at a time
# Characters XML 1.0 forbids even when escaped.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_json_encoder = msgspec.json.Encoder(order="deterministic")
_ROOT = Urls(0)  # the downloads are at the site root: their links are relative to it


def defused(text: str | None) -> str | None:
    """Text a spreadsheet shows as text: one starting like a formula gets a leading quote."""
    return "'" + text if text is not None and text.startswith(FORMULA_STARTS) else text


def csv_cell(value: object) -> str:
    """One CSV field: empty for None, repr-exact numbers, ISO dates; strings defused against formulas."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, str):
        return defused(value)
    return repr(value)


def csv_lines(rows: Iterable[Sequence[object]]) -> str:
    """CSV lines (RFC 4180 line ends) of rows whose fields the csv module writes as they are: strings
    already defused, numbers (it writes a float's repr, an int's digits) and None (empty)."""
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()


def csv_document(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A CSV document: a header row, then the rows (as csv_lines writes them)."""
    return csv_lines(itertools.chain([header], rows))


def prefill_measurement(point: PrefillPoint) -> tuple[object, ...]:
    """A prefill point as a measurement row: one request, prompt tok/s in the total column."""
    return (
        "prefill", point.context_tokens, 1, defused(point.status), point.prompt_tok_s, None, point.ttft_ms,
        None, None, None, None, None, defused(point.error), *_NO_SERVING,
    )


def serving_measurement(cell: DecodeCell) -> tuple[object, ...]:
    """A decode cell's speculative decoding and energy columns: the figures of a valid reading only, and
    whether the reading was valid ("true", "false", empty without one)."""
    speculative, energy = given(cell.speculative), given(cell.energy)
    if speculative is None and energy is None:
        return _NO_SERVING
    rates = (speculative.acceptance_rate, speculative.mean_acceptance_length) if speculative else (None, None)
    valid = valid_energy(cell)
    joules = (valid.joules_per_output_token, valid.joules_per_token, valid.mean_watts_per_gpu) if valid else (None, None, None)
    return (*rates, *joules, None if energy is None else str(energy.valid).lower())


def decode_measurement(cell: DecodeCell) -> tuple[object, ...]:
    """A decode cell as a measurement row."""
    return (
        "decode", cell.context_tokens, cell.concurrency, defused(cell.status), cell.total_tok_s, cell.per_request_tok_s,
        cell.ttft_ms, cell.tbt_ms, cell.avg_active, cell.completed, cell.output_tokens, cell.measured_s, defused(cell.error),
        *serving_measurement(cell),
    )


def measurements_csv(bundle: Bundle) -> str:
    """Every prefill point and decode cell of a run, one row each, as raw numbers.

    Its rows hold only numbers, None and defused text, which the csv module writes as csv_cell
    would, so they skip csv_cell (a call per field was most of the export's time), and each
    column of numbers is written in one call by number_texts (repr, one by one, was most of the rest).
    """
    rows = [prefill_measurement(p) for p in sorted_prefill(bundle)]
    rows += [decode_measurement(c) for c in sorted_decode(bundle)]
    columns = [column if name in TEXT_COLUMNS else number_texts(column) for name, column in zip(MEASUREMENT_COLUMNS, zip(*rows))]
    return csv_document(MEASUREMENT_COLUMNS, zip(*columns))


def run_list_record(summary: RunSummary, verification: str = "") -> dict[str, object]:
    """A summary as the run list has it: a flat-ish dict plus links to its run page and bundle, relative to the site root,
    and its verification status (pages.verification)."""
    record = msgspec.structs.asdict(summary)
    record["url"] = _ROOT.run(summary.id)
    record["bundle_url"] = _ROOT.run_file(summary.id, "bundle.json")
    record["verification"] = verification
    return record


def run_list_json(summary: RunSummary, verification: str = "") -> bytes:
    """A run's record as runs.json lists it: pretty deterministic JSON, each line indented one level
    as an item of the list (a JSON string holds no raw line break). Made once per run when its bundle
    is read, so that the build joins them (runs_json) instead of encoding every run again."""
    text = msgspec.json.format(_json_encoder.encode(run_list_record(summary, verification)), indent=2)
    return b"  " + text.replace(b"\n", b"\n  ")


def runs_json(records: Sequence[bytes]) -> Iterator[bytes]:
    """runs.json from its runs' run_list_json records, in the order given (the build gives them by id):
    the pretty JSON list of them, byte for byte what formatting the whole list at once writes. In
    pieces of PIECE_RUNS runs, so that writing it (megabytes at 10,000 runs) reuses one small buffer."""
    if not records:
        yield b"[]\n"
        return
    for start in range(0, len(records), PIECE_RUNS):
        yield (b",\n" if start else b"[\n") + b",\n".join(records[start:start + PIECE_RUNS])
    yield b"\n]\n"


def status_column(status: str) -> str:
    """CSV column name of a status count: "Over capacity" -> "cells_over_capacity"."""
    return "cells_" + status_slug(status, "_")


_FIELDS = [f.name for f in msgspec.structs.fields(RunSummary)]
# The summary's fields before its status counts, then the counts as cells_* columns and the links, then the
# fields added after them, then the verification: a column readers had keeps its place.
_SUMMARY_COLUMNS = _FIELDS[:_FIELDS.index("status_counts")]
_LATER_COLUMNS = _FIELDS[_FIELDS.index("status_counts") + 1:]
_RUN_LIST_HEADER = csv_lines([_SUMMARY_COLUMNS + [status_column(s) for s in STATUSES] + ["url", "bundle_url"] + _LATER_COLUMNS
                              + ["verification"]]).encode()


def run_list_row(summary: RunSummary, verification: str = "") -> bytes:
    """A run's line of runs.csv: its summary's fields, its status counts as cells_* columns, its links, the
    summary's later fields, then its verification. Made once per run when its bundle is read, as run_list_json is."""
    record = run_list_record(summary, verification)
    counts = record["status_counts"]
    values = ([record[n] for n in _SUMMARY_COLUMNS] + [counts[s] for s in STATUSES] + [record["url"], record["bundle_url"]]
              + [record[n] for n in _LATER_COLUMNS] + [verification])
    return csv_lines([[csv_cell(v) for v in values]]).encode()


def runs_csv(rows: Sequence[bytes]) -> Iterator[bytes]:
    """runs.csv from its runs' run_list_row lines, in the order given (the build gives them by id), under
    the header; in pieces, as runs_json."""
    yield _RUN_LIST_HEADER
    for start in range(0, len(rows), PIECE_RUNS):
        yield b"".join(rows[start:start + PIECE_RUNS])


def xml_text(text: str) -> str:
    """Text XML 1.0 can carry: forbidden control characters removed (escaping is ElementTree's job)."""
    return _XML_ILLEGAL.sub("", text)


def atom_time(value: dt.datetime) -> str:
    """An RFC 3339 UTC timestamp, as Atom wants."""
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    """Append a child element with optional text and attributes; the text, which feed readers show
    (a run's title, submitter, engine), with its control and reordering characters as escapes."""
    child = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text is not None:
        child.text = xml_text(printable(text))
    return child


def entry_summary(bundle: Bundle) -> str:
    """One line about a run for feed readers: engine and its peak decode throughput."""
    peak = peak_cell(valued_cells(bundle))
    parts = [summary_engine(bundle)]
    if peak is not None:
        parts.append(f"peak {tok_s(peak.total_tok_s)} tok/s at {cell_label(peak.context_tokens, peak.concurrency)}")
    return " · ".join(p for p in parts if p)


def atom_entry(feed: ET.Element, bundle: Bundle, updated: dt.datetime) -> None:
    """Append one run's entry: a tag: URI as its id, its page's link relative to the site root."""
    entry = sub(feed, "entry")
    sub(entry, "title", title(bundle))
    sub(entry, "id", TAG_PREFIX + bundle.id)
    sub(entry, "updated", atom_time(bundle.measured_at or updated))
    sub(entry, "link", href=_ROOT.run(bundle.id), rel="alternate", type="text/html")
    if bundle.submitter:
        sub(sub(entry, "author"), "name", bundle.submitter)
    sub(entry, "summary", entry_summary(bundle))


def atom_feed(bundles: Iterable[Bundle], updated: dt.datetime, notices: Iterable[ET.Element] = ()) -> str:
    """An Atom 1.0 feed of runs in the order given (the build gives them newest first), after the `notices`
    entries (a series' regressions and improvements); links are relative to the root."""
    feed = ET.Element("feed", xmlns=ATOM_NS)
    sub(feed, "title", FEED_TITLE)
    sub(feed, "id", TAG_PREFIX.removesuffix("runs/") + "feed")
    sub(feed, "updated", atom_time(updated))
    sub(sub(feed, "author"), "name", "speed-matrix")
    feed.extend(notices)
    for bundle in bundles:
        atom_entry(feed, bundle, updated)
    ET.indent(feed)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(feed, encoding="unicode") + "\n"
