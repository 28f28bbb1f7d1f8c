"""The texts of every table's rows and cells, escaped, for _cells.html's macros: the filters
ratio_texts, table_texts, prefill_texts, capacity_texts, field_texts and join_texts, and matrix_texts.

The macros write the rows and cells a page prints in bulk with autoescape off, so each text is escaped
here, once; a table that holds nothing to escape (the usual: figures and status words) is found in one
search and its texts kept as they are.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import msgspec
from markupsafe import escape

from runner.bundle.display import status_slug
from sitegen.views import runview
from sitegen.views.capacity_view import PresetRow

_TO_ESCAPE = re.compile(r"[&<>\"']")

# A decode matrix cell's texts: status class, heat, title (its failure reason), value, status word, TTFT.
MatrixCellTexts = tuple[str, str, str, str, str, str]
# A ratio matrix cell's texts: direction class, the baseline's cell (its tok/s or status word), the other run's, the ratio.
RatioCellTexts = tuple[str, str, str]
# A prefill item's texts: status class, title (its failure reason), label, value, TTFT.
PrefillTexts = tuple[str, str, str, str, str]
# A capacity answer's values: whether a cell met the target, requests at once, total tok/s, tok/s per GPU.
AnswerTexts = tuple[bool, str, str, str]


@functools.cache  # a bundle's statuses are a few words, met at every cell
def status_class(status: str) -> str:
    """CSS class suffix of a status: "Over capacity" -> "over-capacity"; a cell without one is "none"."""
    return status_slug(status) or "none"


def _escaped(value: Any) -> Any:
    """`value` with every text in it escaped: a string, or a copy of a list, dict or Struct of them."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **{name: _escaped(getattr(value, name)) for name in value.__struct_fields__})
    return value


def join_texts(texts: list[str], separator: str) -> str:
    """The `join_texts` filter: texts escaped already joined by the separator, as they are (Jinja's join
    turns each into a string again)."""
    return separator.join(texts)


def _plain(texts: list[str]) -> bool:
    """Whether none of `texts` holds a character to escape: the usual table (figures, status words),
    whose texts are then kept as they are, checked in one search."""
    return _TO_ESCAPE.search("".join(texts)) is None


def matrix_texts(rows: list[runview.MatrixRow]) -> list[tuple[str, list[MatrixCellTexts]]]:
    """The decode matrix's rows for _cells.html's matrix_rows."""
    if not _plain([c.status + c.value + c.note + c.ttft + (c.error or "") for row in rows for c in row.cells] + [row.label for row in rows]):
        rows = _escaped(rows)
    return [(row.label, [(status_class(c.status), "" if c.heat is None else str(c.heat), c.error or "", c.value, c.note, c.ttft)
                         for c in row.cells]) for row in rows]


def ratio_texts(rows: list[dict]) -> list[tuple[str, list[RatioCellTexts]]]:
    """The ratio matrix's rows (compare_view.compare_rows) for _cells.html's ratio_rows."""
    if not _plain([c["class"] + c["sub"] + c["text"] for row in rows for c in row["cells"]] + [row["label"] for row in rows]):
        rows = _escaped(rows)
    return [(row["label"], [(c["class"], c["sub"], c["text"]) for c in row["cells"]]) for row in rows]


def table_texts(rows: list[list[str]]) -> list[tuple[str, list[str]]]:
    """The measurements table's rows for _cells.html's measurement_rows, each with its status class (row[3]'s)."""
    if not _plain(list(map("".join, rows))):
        rows = _escaped(rows)
    return [(status_class(row[3]), row) for row in rows]


def prefill_texts(items: list[runview.PrefillItem]) -> list[PrefillTexts]:
    """The prefill list's items for _cells.html's prefill_items."""
    if not _plain([i.status + i.label + i.value + i.ttft + (i.error or "") for i in items]):
        items = _escaped(items)
    return [(status_class(i.status), i.error or "", i.label, i.value, i.ttft) for i in items]


def capacity_texts(rows: list[PresetRow]) -> list[tuple[str, list[AnswerTexts]]]:
    """The capacity table's rows for _cells.html's capacity_rows: a context's label and an answer per preset."""
    if not _plain([a.requests + a.total + a.per_gpu for row in rows for a in row.answers] + [row.label for row in rows]):
        rows = _escaped(rows)
    return [(row.label, [(a.qualified, a.requests, a.total, a.per_gpu) for a in row.answers]) for row in rows]


def field_texts(fields: list[runview.Field]) -> list[tuple[str, str]]:
    """A facts section's label/value pairs for _cells.html's fact_fields."""
    if not _plain([field.label + field.value for field in fields]):
        fields = _escaped(fields)
    return [(field.label, field.value) for field in fields]


FILTERS: dict[str, Callable[..., Any]] = {
    "join_texts": join_texts,
    "ratio_texts": ratio_texts,
    "table_texts": table_texts,
    "prefill_texts": prefill_texts,
    "capacity_texts": capacity_texts,
    "field_texts": field_texts,
}
