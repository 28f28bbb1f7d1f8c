"""Check a captured page against itself: its matrix cells, prefill items and summary
line must say what the bundle read from its "All measurements" table renders to.

Captures lose separators and whitespace, so text is compared squashed, and each
disagreement is an error naming the line it is on.
"""

from __future__ import annotations

import re

from runner.bundle.display import COLD_TTFT_NOTE, LEGEND
from runner.bundle.display import PAGE_TEXT as T
from runner.bundle.display import TTFT_NOTE
from sitegen.errors import InputError
from sitegen.importers.captured_page_text import Cursor
from sitegen.importers.lines import Line
from sitegen.views import runview

_ITEM_RE = re.compile(r"(\d+(?:\.\d+)?K?)context(.*?)(?=\d+(?:\.\d+)?K?context|$)")


def _squash(text: str) -> str:
    """Text without whitespace or table punctuation, for comparing captures."""
    return re.sub(r"[\s|]+", "", text)


def check_summary(engine: str, shape: str, lines: list[Line], cur: Cursor) -> list[InputError]:
    """The summary line must be the engine line and the shape of the matrix and prefill."""
    shown = "".join(line.text for line in lines)
    if _squash(shown) == _squash(engine + shape):
        return []
    where = lines[0] if lines else None
    return [cur.error(f"summary line {shown[:80]!r} disagrees with the page's data: expected {engine!r} then {shape!r}", where)]


def check_prefill(view: runview.RunView, lines: list[Line], cur: Cursor) -> list[InputError]:
    """Each prefill item must say what the All measurements row for its context says."""
    shown = {m.group(1): m.group(2) for m in _ITEM_RE.finditer(_squash("".join(line.text for line in lines)))}
    errors = []
    where = lines[0] if lines else None
    for item in view.prefill:
        label = item.label.removesuffix(" context")
        expected = _squash(item.value + item.ttft)
        if label not in shown:
            errors.append(cur.error(f"prefill item {item.label!r} is missing", where))
        elif shown[label] != expected:
            errors.append(cur.error(f"prefill item {item.label!r} shows {shown[label]!r} but All measurements says {expected!r}", where))
    extra = set(shown) - {i.label.removesuffix(" context") for i in view.prefill}
    errors += [cur.error(f"prefill item '{label} context' has no row in All measurements", where) for label in sorted(extra)]
    return errors


def check_matrix(view: runview.RunView, lines: list[Line], cur: Cursor) -> list[InputError]:
    """Each matrix cell must say what the All measurements row for that cell says."""
    rows = {}
    for line in lines:
        text = line.text
        if text in LEGEND.values() or text in (TTFT_NOTE, COLD_TTFT_NOTE):
            continue
        cells = [c.strip() for c in re.split(r"\t|\|", text.strip().strip("|"))]
        if cells and cells[0] == T.matrix_corner:
            continue
        label = cells[0].split()[0] if cells and cells[0] else ""
        rows[label] = (line, cells)
    errors = []
    for row in view.matrix:
        if row.label not in rows:
            errors.append(cur.error(f"matrix row {row.label!r} is missing", lines[0] if lines else None))
            continue
        line, cells = rows.pop(row.label)
        expected = [_squash(c.text) for c in row.cells]
        errors += _compare_cells(row, line, cells, expected, cur)
    errors += [cur.error(f"matrix row {label!r} has no rows in All measurements", line) for label, (line, _) in rows.items()]
    return errors


def _compare_cells(row: runview.MatrixRow, line: Line, cells: list[str], expected: list[str], cur: Cursor) -> list[InputError]:
    """Cell by cell where the capture kept its separators, else the row as a whole."""
    if len(cells) == len(expected) + 1:
        return [
            cur.error(f"matrix cell {row.label} × {c.concurrency} shows {got!r} but All measurements says {want!r}", line)
            for c, got, want in zip(row.cells, (_squash(x) for x in cells[1:]), expected)
            if got != want
        ]
    shown = _squash(line.text)[len(row.label):]
    if shown == "".join(expected):
        return []
    for c, want in zip(row.cells, expected):
        if not shown.startswith(want):
            return [cur.error(f"matrix cell {row.label} × {c.concurrency} shows {shown[:len(want)]!r}… but All measurements says {want!r}", line)]
        shown = shown[len(want):]
    return [cur.error(f"matrix row {row.label} has more cells than All measurements", line)]
