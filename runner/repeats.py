"""A cell measured several times (`runner measure --repeats N`): its repeats in one DecodeCell.

Every repeat is kept, in the order measured; the cell's own figures are the medians over the
repeats that have a value, and the spread of their total tok/s is recorded beside them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import msgspec
from msgspec import UNSET

from runner.bundle.display import has_value
from runner.bundle.schema import DecodeCell

RATES = ("total_tok_s", "per_request_tok_s", "ttft_ms", "tbt_ms", "avg_active", "measured_s")
COUNTS = ("completed", "output_tokens")
TAILS = ("ttft_p90_ms", "ttft_p99_ms", "tbt_p90_ms", "tbt_p99_ms")


def _median(cells: Sequence[DecodeCell], name: str, middle: Callable, missing: object) -> object:
    """`middle` of one figure over the cells that have it, else `missing`."""
    values = [v for c in cells if (v := getattr(c, name)) is not None and v is not UNSET]
    return middle(values) if values else missing


def spread_pct(totals: Sequence[float]) -> float:
    """(highest − lowest) ÷ median of the repeats' total tok/s, in percent; 0 when the median is 0."""
    middle = statistics.median(totals)
    return (max(totals) - min(totals)) / middle * 100 if middle else 0.0


def combine(repeats: Sequence[DecodeCell]) -> DecodeCell:
    """One cell from its repeats: medians of the valued ones, Requests queued if any of them queued.

    Where no repeat has a value (all Looped or Failed), the cell is the first repeat, with every
    repeat kept beside it. Counts take the lower middle value, so they stay whole.
    """
    kept = list(repeats)
    valued = [r for r in kept if has_value(r)]
    if not valued:
        return msgspec.structs.replace(kept[0], repeats=kept)
    figures: dict[str, object] = {name: _median(valued, name, statistics.median, None) for name in RATES}
    figures |= {name: _median(valued, name, statistics.median_low, None) for name in COUNTS}
    figures |= {name: _median(valued, name, statistics.median, UNSET) for name in TAILS}
    status = "Requests queued" if any(r.status == "Requests queued" for r in valued) else "Valid"
    spread = spread_pct([r.total_tok_s for r in valued]) if len(valued) > 1 else UNSET
    return DecodeCell(
        context_tokens=valued[0].context_tokens, concurrency=valued[0].concurrency, status=status,
        prompt_tokens=valued[0].prompt_tokens, repeats=kept, total_tok_s_spread_pct=spread, **figures,
    )
