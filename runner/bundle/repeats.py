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
from runner.bundle.schema import DecodeCell, SpeculativeCheck

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
        prompt_tokens=valued[0].prompt_tokens, repeats=kept, total_tok_s_spread_pct=spread,
        speculative=pooled_speculative(valued), **figures,
    )


def pooled_speculative(cells: Sequence[DecodeCell]) -> SpeculativeCheck | msgspec.UnsetType:
    """Speculative decoding over every repeat as one: counts added up and the rates taken from the
    sums (as one longer window would give them); running means, where that is all there is, averaged."""
    checks = [c.speculative for c in cells if isinstance(c.speculative, SpeculativeCheck)]
    if not checks:
        return UNSET
    counted = [s for s in checks if s.drafts is not None]
    if not counted:
        lengths = [s.mean_acceptance_length for s in checks if s.mean_acceptance_length is not None]
        rates = [s.acceptance_rate for s in checks if s.acceptance_rate is not None]
        return SpeculativeCheck(source=checks[0].source, mean_acceptance_length=statistics.fmean(lengths) if lengths else None,
                                acceptance_rate=statistics.fmean(rates) if rates else None)
    drafts = sum(s.drafts or 0 for s in counted)
    drafted = sum(s.draft_tokens or 0 for s in counted)
    accepted = sum(s.accepted_tokens or 0 for s in counted)
    width = max((len(s.per_position or []) for s in counted), default=0)
    per_position = [sum((s.per_position or [0.0] * width)[k] * (s.drafts or 0) for s in counted
                        if len(s.per_position or []) > k) / drafts for k in range(width)] if drafts and width else None
    return SpeculativeCheck(source=counted[0].source, drafts=drafts, draft_tokens=drafted, accepted_tokens=accepted,
                            acceptance_rate=accepted / drafted if drafted else None,
                            mean_acceptance_length=1 + accepted / drafts if drafts else None, per_position=per_position)
