"""Statuses that agree with their fields: a measured cell has its figures, one that was not measured has none.

- Valid, Requests queued and Distorted: tokens came out (total tok/s above zero; the loader
  already requires Valid and Requests queued to have it);
- Over capacity: not run, so no figure, count, duration or repeat;
- Looped and Failed: the window was thrown away, so no rate or latency, and no tokens counted;
- a repeat holds no repeats of its own;
- no count above the schema's bound on tokens (the relations are not judged with one);
- prefill: a Valid point has its prompt tok/s and TTFT; an Over capacity, Looped or Failed one no prompt tok/s.
"""

from __future__ import annotations

from msgspec import UNSET

from runner.bundle.display import VALUED
from runner.bundle.repeats import RATES, TAILS
from runner.bundle.schema import MAX_TOKENS, Bundle, DecodeCell, PrefillPoint
from sitegen.check.fields import Found, Record, oversized, prefill_path

MEASURED = ("Valid", "Requests queued", "Distorted")
DISCARDED = ("Looped", "Failed")
# Every field a cell that was never run leaves empty: its figures, counts, window and repeats.
NOT_RUN = (*RATES, "completed", "output_tokens", *TAILS, "repeats")


def record_problems(record: Record) -> Found:
    """The fields a decode record's status disagrees with, and counts no record may hold (by field)."""
    cell = record.cell
    found: Found = [(name, f"more than the {MAX_TOKENS:,} any bundle may count") for name in record.oversized]
    status = cell.status
    if status in MEASURED:
        if not cell.total_tok_s and (cell.total_tok_s is not None or status not in VALUED):  # the loader names the rest
            found.append(("total_tok_s", f"a {status} cell with no output: a window without tokens is Failed"))
    elif status == "Over capacity":
        found += [(name, "an Over capacity cell was not run, so it holds no measurement") for name in NOT_RUN if _present(cell, name)]
    elif status in DISCARDED:
        found += [(name, f"a {status} cell's window was discarded, so it holds no figures")
                  for name in (*RATES, *TAILS) if name != "measured_s" and _present(cell, name)]
        if cell.output_tokens:
            found.append(("output_tokens", f"a {status} cell's window was discarded, so it counts no tokens"))
    if record.parent is not None and cell.repeats:
        found.append(("repeats", "a repeat holds repeats of its own"))
    return found


def prefill_problems(bundle: Bundle) -> Found:
    """The fields each prefill point's status disagrees with, and counts no point may hold."""
    found: Found = []
    for index, point in enumerate(bundle.prefill):
        found += _point(prefill_path(index), point)
    return found


def _present(cell: DecodeCell, name: str) -> bool:
    """Whether the record holds a value for the field (neither null nor left out)."""
    return getattr(cell, name) not in (None, UNSET)


def _point(where: str, point: PrefillPoint) -> Found:
    """The fields one prefill point's status disagrees with, and counts no point may hold."""
    found: Found = [(f"{where}.{name}", f"more than the {MAX_TOKENS:,} any bundle may count") for name in oversized(point)]
    if point.status == "Valid":
        found += [(f"{where}.{name}", "a Valid prefill point needs it") for name in ("prompt_tok_s", "ttft_ms")
                  if getattr(point, name) is None]
    elif point.status not in MEASURED and point.prompt_tok_s is not None:
        found.append((f"{where}.prompt_tok_s", f"a {point.status} prefill point holds no prompt tok/s"))
    return found
