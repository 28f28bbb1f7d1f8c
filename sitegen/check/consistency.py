"""Internal consistency: the relations a record's figures hold among themselves, within tolerances.py's bounds.

- output tokens ≈ total tok/s × measured for;
- total tok/s ≈ average active × per-request tok/s;
- average active ≤ requests at once;
- requests finished ≤ output tokens + requests at once (each one's last token falls in the window);
- per-request tok/s no faster than the time between tokens allows (and, in a runner's window, no slower);
- medians ≤ p90 ≤ p99;
- TTFT, to its p99, no longer than a request counted in the window can have waited: from the run's
  start to the window's end where both are recorded, else a bound from the run's cold prefill;
- prompt tok/s = prompt tokens ÷ TTFT;
- a cell measured several times: each figure within its repeats' range, and their spread as stated.
"""

from __future__ import annotations

import datetime as dt

from msgspec import UNSET

from runner.bundle.display import has_value
from runner.bundle.repeats import COUNTS, RATES, TAILS, spread_pct
from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint
from sitegen.check.fields import Found, cell_path, oversized, prefill_path
from sitegen.check.tolerances import (
    CLOCK_SLACK_S,
    CONTEXT_AS_PROMPT,
    FLOAT_SLACK,
    REPORTED,
    TTFT_QUEUE,
    WINDOW,
    Tolerances,
    measured_by_runner,
)

# The latencies a record orders from its median up.
TTFT_ORDER = ("ttft_ms", "ttft_p90_ms", "ttft_p99_ms")
TBT_ORDER = ("tbt_ms", "tbt_p90_ms", "tbt_p99_ms")


def cold_ttft(bundle: Bundle) -> dict[int, float]:
    """The run's cold prefill TTFT at each context it measured: what figure_problems bounds a window's TTFT by
    where the window's start is not recorded."""
    return {point.context_tokens: point.ttft_ms for point in bundle.prefill if point.ttft_ms and not oversized(point)}


def prefill_problems(bundle: Bundle) -> Found:
    """Every prefill point whose prompt tok/s and TTFT do not make its prompt."""
    tolerances = WINDOW if measured_by_runner(bundle) else REPORTED
    found: Found = []
    for index, point in enumerate(bundle.prefill):
        if not oversized(point):
            found += _prefill(prefill_path(index), point, tolerances)
    return found


def repeat_problems(bundle: Bundle) -> Found:
    """Every figure of a repeated cell outside its repeats' range, and every spread stated otherwise."""
    found: Found = []
    for index, cell in enumerate(bundle.decode):
        if cell.repeats and not any(map(oversized, [cell, *cell.repeats])):
            found += _repeats(cell_path(index), cell, cell.repeats)
    return found


def figure_problems(cell: DecodeCell, run_started: dt.datetime | None, cold_ttft_ms: float | None) -> Found:
    """The relations of one record's latencies (by field): their order, and TTFT's bound (_ttft_bound)."""
    return _tails(cell) + _ttft_bound(cell, run_started, cold_ttft_ms)


def window_problems(cell: DecodeCell, allowed: Tolerances, step_tokens: int) -> Found:
    """The relations of one window's figures (by the field that breaks one): output, total against active,
    active against requests, rate against gaps."""
    found: Found = []
    total, per, active, tbt = cell.total_tok_s, cell.per_request_tok_s, cell.avg_active, cell.tbt_ms
    if total is not None and cell.output_tokens is not None and cell.measured_s is not None:
        expected = total * cell.measured_s
        if abs(cell.output_tokens - expected) > allowed.output * cell.output_tokens + allowed.output_tokens:
            found.append(("output_tokens", f"{cell.output_tokens:,} output tokens, but total {total:g} tok/s × "
                                           f"{cell.measured_s:g} s measured = {expected:,.1f}"))
    if total is not None and per and active:
        ratio = total / (active * per)
        if not 1 / allowed.active_factor <= ratio <= allowed.active_factor:
            found.append(("total_tok_s", f"total {total:g} tok/s, but average active {active:g} × per-request "
                                         f"{per:g} tok/s = {active * per:g}: more than {allowed.active_factor:g} times apart"))
    most = cell.output_tokens + cell.concurrency if cell.output_tokens is not None else None
    if cell.completed is not None and most is not None and cell.completed > most:
        found.append(("completed", f"{cell.completed:,} requests finished, but the window's {cell.output_tokens:,} output "
                                   f"tokens allow at most {most:,} (each one's last token falls in it)"))
    if active is not None and active > cell.concurrency * (1 + FLOAT_SLACK):
        found.append(("avg_active", f"{active:g} requests active on average, more than the {cell.concurrency} sent at once"))
    if per and tbt:
        product = per * tbt / 1000
        if product > allowed.gap_ceiling * step_tokens:
            found.append(("per_request_tok_s", f"{per:g} tok/s per request, faster than {tbt:g} ms between tokens "
                                               f"allows ({step_tokens * 1000 / tbt:g} tok/s)"))
        elif product < allowed.gap_floor:
            found.append(("per_request_tok_s", f"{per:g} tok/s per request, slower than the {tbt:g} ms between tokens "
                                               f"gives ({1000 / tbt:g} tok/s)"))
    return found


def _tails(cell: DecodeCell) -> Found:
    """TTFT and time between tokens: the median, p90 and p99 that a record holds, in that order (by field)."""
    if cell.ttft_p90_ms is UNSET and cell.tbt_p90_ms is UNSET and cell.ttft_p99_ms is UNSET and cell.tbt_p99_ms is UNSET:
        return []  # a median alone: nothing to order
    found: Found = []
    for names in (TTFT_ORDER, TBT_ORDER):
        ordered = [(name, value) for name in names if (value := getattr(cell, name)) is not None and value is not UNSET]
        for (low_name, low), (high_name, high) in zip(ordered, ordered[1:]):
            if high < low * (1 - FLOAT_SLACK):
                found.append((high_name, f"{high:g} ms, below the {low:g} ms of {low_name}"))
    return found


def _ttft_bound(cell: DecodeCell, run_started: dt.datetime | None, cold_ttft_ms: float | None) -> Found:
    """TTFT no longer than a request counted in the window can have waited for its first token (by field).

    Each request counted got its first token by the window's end and was sent after the run began.
    A window without its start is held to `TTFT_QUEUE` times the run's cold prefill TTFT at its
    context per request sent at once, plus the window's length, and left unjudged without either.
    """
    from_start = cell.window_started_at is not UNSET and run_started is not None
    if from_start and cell.measured_s is not None:
        waited = cell.window_started_at - run_started
        longest = (waited.total_seconds() + cell.measured_s + CLOCK_SLACK_S) * 1000
    elif cold_ttft_ms is not None and cell.measured_s is not None:
        longest = TTFT_QUEUE * cell.concurrency * cold_ttft_ms + cell.measured_s * 1000
    else:
        return []
    found: Found = []
    for name in TTFT_ORDER:
        value = getattr(cell, name)
        if value is not None and value is not UNSET and value > longest:
            found.append((name, f"{value:g} ms, longer than {_ttft_reason(cell, from_start, cold_ttft_ms)} allows "
                                f"({longest:,.0f} ms)"))
    return found


def _ttft_reason(cell: DecodeCell, from_start: bool, cold_ttft_ms: float | None) -> str:
    """What _ttft_bound held a cell's TTFT to, in words (made only for a problem)."""
    if from_start:
        return "the time from the run's start to the window's end"
    return (f"{TTFT_QUEUE} × {cell.concurrency} at once × the {cold_ttft_ms:g} ms cold prefill at this context "
            f"+ the {cell.measured_s:g} s window")


def _repeats(where: str, cell: DecodeCell, repeats: list[DecodeCell]) -> Found:
    """A repeated cell's figures within its repeats' range, and their spread as stated."""
    found: Found = []
    for name in (*RATES, *COUNTS, *TAILS):
        value = getattr(cell, name)
        seen = [v for r in repeats if (v := getattr(r, name)) is not None and v is not UNSET]
        if value is None or value is UNSET or not seen:
            continue
        if not min(seen) * (1 - FLOAT_SLACK) <= value <= max(seen) * (1 + FLOAT_SLACK):
            found.append((f"{where}.{name}", f"{value:g}, outside its repeats' range {min(seen):g} to {max(seen):g}: "
                                             "a cell shows their median"))
    totals = [r.total_tok_s for r in repeats if has_value(r) and r.total_tok_s is not None]
    stated = cell.total_tok_s_spread_pct
    if stated is not UNSET and len(totals) > 1:
        spread = spread_pct(totals)
        if abs(stated - spread) > FLOAT_SLACK * max(1.0, spread):
            found.append((f"{where}.total_tok_s_spread_pct", f"{stated:g} %, but the repeats' total tok/s spread {spread:g} %"))
    return found


def _prefill(where: str, point: PrefillPoint, allowed: Tolerances) -> Found:
    """Prompt tok/s × TTFT against the prompt's tokens (its context where they are not recorded)."""
    rate, ttft = point.prompt_tok_s, point.ttft_ms
    if rate is None or ttft is None:
        return []
    tokens, share = (point.prompt_tokens, allowed.prefill) if point.prompt_tokens else (point.context_tokens, CONTEXT_AS_PROMPT)
    prefilled = rate * ttft / 1000
    if abs(prefilled - tokens) > share * tokens + rate * allowed.prefill_ttft_ms / 1000:
        return [(f"{where}.prompt_tok_s", f"{rate:g} tok/s over {ttft:g} ms of TTFT is {prefilled:,.0f} tokens, "
                                          f"but the prompt held {tokens:,}")]
    return []
