"""Recomputation: every cell's figures again from the raw request records beside the bundle.

The records (`<id>.requests.jsonl.gz`, runner/bundle/records.py) hold every request of every
window the runner kept; `window_figures`, the one function the runner computed the figures with,
turns each window back into them. They must come out exactly as the bundle stores them (floats
round-trip through JSON unchanged), and a cell measured several times must be its repeats' medians
(runner/bundle/repeats.py). Each request is also held to the run's max output.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import msgspec

from runner.bundle.records import RequestRecord, WindowFigures, WindowRecord, read_windows, records_path, window_figures
from runner.bundle.repeats import COUNTS, RATES, TAILS, combine
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.check.fields import cell_path, windows
from sitegen.check.verdict import Problem, RecordsState

# The largest records file read: a seed-sized matrix's records take about 2 MB; this leaves room
# for far larger runs while refusing a file that would only exhaust memory.
MAX_RECORDS_BYTES = 1 << 30
FIGURES = tuple(WindowFigures.__struct_fields__)
Key = tuple[int, int, int]


def recompute(path: Path, bundle: Bundle) -> tuple[RecordsState, list[Problem]]:
    """Whether the records beside the bundle at `path` are absent, recompute every cell, or differ (with the problems)."""
    records = records_path(path)
    if not records.exists() and not records.is_symlink():
        return "absent", []
    try:
        found = _read(records)
    except (OSError, EOFError, ValueError, ArithmeticError, zlib.error, msgspec.DecodeError) as exc:
        reason = str(exc) or type(exc).__name__
        return "differ", [Problem(str(records), None, f"cannot read the request records: {reason}")]
    held = {(w.cell.context_tokens, w.cell.concurrency, w.repeat) for w in windows(bundle)}
    unclaimed = [f"a window of context {context} × {concurrency} (repeat {repeat}), a cell the bundle does not hold"
                 for context, concurrency, repeat in sorted(found.figures.keys() - held)]
    problems = [Problem(str(records), None, message) for message in [*found.errors, *unclaimed]]
    problems += [Problem(str(path), where, message) for where, message in _compared(bundle, found, records.name)]
    return ("differ" if problems else "recompute"), problems


def _compared(bundle: Bundle, found: Recomputed, name: str) -> Iterator[tuple[str, str]]:
    """(where, message) for each window the records lack or give otherwise, or hold for a cell never run,
    each request over the max output, and each repeated cell that is not its repeats' medians."""
    most = bundle.run.max_output_tokens
    for window in windows(bundle):
        key = (window.cell.context_tokens, window.cell.concurrency, window.repeat)
        if window.cell.status == "Over capacity" and key in found.figures:
            yield f"{window.where}.status", f"Over capacity, so never run, but {name} holds a window of this cell"
        if window.cell.total_tok_s is None:
            continue
        if key not in found.figures:
            yield window.where, f"no window of this cell in {name}"
            continue
        for field, message in _differences(window.cell, found.figures[key]):
            yield f"{window.where}.{field}", message
        if most and found.longest[key] > most:
            yield (f"{window.where}.output_tokens", f"a request in {name} streamed {found.longest[key]:,} tokens, "
                                                    f"more than the run's max output {most:,}")
    for index, cell in enumerate(bundle.decode):
        for field, message in _medians(cell) if cell.repeats else ():
            yield f"{cell_path(index)}.{field}", message


class Recomputed(msgspec.Struct):
    """What a records file gives: each cell's last window's figures, its longest request, and what could not be recomputed."""

    figures: dict[Key, WindowFigures]
    longest: dict[Key, int]
    errors: list[str]


def _read(records: Path) -> Recomputed:
    """Each cell's last window in the records file, recomputed; raises what reading a damaged file raises."""
    if not records.is_file():
        raise ValueError("not a regular file")
    size = records.stat().st_size
    if size > MAX_RECORDS_BYTES:
        raise ValueError(f"{size:,} bytes, more than the {MAX_RECORDS_BYTES:,} read")
    last: dict[Key, tuple[WindowRecord, list[RequestRecord]]] = {}
    for window, requests in read_windows(records):  # of a cell measured again, the last window counts
        last[(window.context, window.concurrency, window.repeat)] = (window, requests)
    found = Recomputed({}, {}, [])
    for key, (window, requests) in last.items():
        if window.window_us <= 0:
            found.errors.append(f"the window of context {key[0]} × {key[1]} (repeat {key[2]}) lasts {window.window_us} µs")
            continue
        found.figures[key] = window_figures(window.window_us, requests)
        found.longest[key] = max((request.tokens for request in requests), default=0)
    return found


def _differences(cell: DecodeCell, again: WindowFigures) -> list[tuple[str, str]]:
    """(field, message) for each figure the bundle states otherwise than its records give."""
    return [(name, f"{_shown(stated)} in the bundle, but its raw records give {_shown(recomputed)}")
            for name in FIGURES if (stated := getattr(cell, name)) != (recomputed := getattr(again, name))]


def _medians(cell: DecodeCell) -> list[tuple[str, str]]:
    """(field, message) for each figure of a repeated cell that is not what its repeats make (runner.bundle.repeats.combine)."""
    made = combine(cell.repeats or [])
    names = (*RATES, *COUNTS, *TAILS, "total_tok_s_spread_pct", "status")
    return [(name, f"{_shown(stated)} in the bundle, but its repeats make {_shown(expected)}")
            for name in names if (stated := getattr(cell, name)) != (expected := getattr(made, name))]


def _shown(value: object) -> str:
    """A figure as the message quotes it: every digit of a float (a difference may lie in the last), "none" for a missing one."""
    return "none" if value is None or value is msgspec.UNSET else repr(value)
