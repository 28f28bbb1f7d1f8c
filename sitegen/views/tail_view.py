"""Tail latency and noise of a run's decode cells, as the display rows of `_tail.html`.

The matrix shows medians; this view adds what a median hides: the 90th and 99th percentiles of
TTFT and time between tokens, and, for a run measured with `runner measure --repeats`, how far
the repeats of each cell lay apart.
"""

from __future__ import annotations

from collections import Counter

import msgspec
from msgspec import UNSET

from runner.bundle import formats as f
from runner.bundle.display import has_value
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.views.runview import sorted_decode


class TailRow(msgspec.Struct, frozen=True):
    """One cell's tail percentiles and repeat spread, as display strings."""

    context: str
    concurrency: int
    ttft: tuple[str, str, str]
    tbt: tuple[str, str, str]
    repeats: str
    total_range: str
    spread: str


class TailView(msgspec.Struct, frozen=True):
    """The section's rows and which of its two halves the run has data for."""

    rows: list[TailRow]
    tails: bool
    noise: bool


def repeats_of(cell: DecodeCell) -> list[DecodeCell]:
    """The cell's repeats as measured, or none for a cell measured once."""
    return [] if cell.repeats is UNSET else cell.repeats


def repeat_totals(cell: DecodeCell) -> list[float]:
    """The total tok/s of each repeat that has a value."""
    return [r.total_tok_s for r in repeats_of(cell) if has_value(r)]


def total_range(cell: DecodeCell) -> tuple[float, float] | None:
    """The lowest and highest total tok/s over the cell's repeats; None unless two or more have a value."""
    totals = repeat_totals(cell)
    return (min(totals), max(totals)) if len(totals) >= 2 else None


def has_tails(cell: DecodeCell) -> bool:
    return any(value is not UNSET for value in (cell.ttft_p90_ms, cell.ttft_p99_ms, cell.tbt_p90_ms, cell.tbt_p99_ms))


def _unset_empty(value: float | None) -> float | None:
    return None if value is UNSET else value


def repeats_text(cell: DecodeCell) -> str:
    """"3", or "3 (1 Looped)" when some repeats hold no value."""
    repeats = repeats_of(cell)
    if not repeats:
        return f.EMPTY
    others = Counter(r.status for r in repeats if not has_value(r))
    detail = ", ".join(f"{count} {status}" for status, count in sorted(others.items()))
    return f"{len(repeats)}" + (f" ({detail})" if detail else "")


def tail_row(cell: DecodeCell) -> TailRow:
    """The display strings of one cell: p50 (the matrix's median), p90 and p99, then the repeats."""
    found = total_range(cell)
    spread = _unset_empty(cell.total_tok_s_spread_pct)
    return TailRow(
        context=f.context_label(cell.context_tokens),
        concurrency=cell.concurrency,
        ttft=(f.ms_whole(cell.ttft_ms), f.ms_whole(_unset_empty(cell.ttft_p90_ms)), f.ms_whole(_unset_empty(cell.ttft_p99_ms))),
        tbt=(f.ms_tenth(cell.tbt_ms), f.ms_tenth(_unset_empty(cell.tbt_p90_ms)), f.ms_tenth(_unset_empty(cell.tbt_p99_ms))),
        repeats=repeats_text(cell),
        total_range=f"{f.tok_s(found[0])} – {f.tok_s(found[1])}" if found else f.EMPTY,
        spread=f"{f.one_decimal(spread)} %" if spread is not None else f.EMPTY,
    )


def tail_view(bundle: Bundle) -> TailView:
    """Rows for the cells that carry percentiles or repeats; no rows for a run that has neither."""
    cells = [c for c in sorted_decode(bundle) if has_tails(c) or repeats_of(c)]
    return TailView(
        rows=[tail_row(c) for c in cells],
        tails=any(has_tails(c) for c in cells),
        noise=any(repeats_of(c) for c in cells),
    )
