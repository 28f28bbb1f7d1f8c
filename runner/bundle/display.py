"""What a prefill point and a decode cell show, in the pages' words: shared by every page and the
runner's live terminal view, so the terminal and the published page never disagree."""

from __future__ import annotations

from runner.bundle import formats as f
from runner.bundle.schema import DecodeCell, PrefillPoint

PREFILL_CAPTION = "prompt tok/s by context length"
DECODE_CAPTION = "total tok/s · rows are context length, columns are simultaneous requests"
# Statuses whose cells keep their figures; a Distorted cell shows them too, unshaded.
VALUED = ("Valid", "Requests queued")
DISTORTED = "Distorted"


def shows_figures(cell: DecodeCell) -> bool:
    """Whether a cell prints its total tok/s (and TTFT) rather than only its status word."""
    return cell.status in (*VALUED, DISTORTED) and cell.total_tok_s is not None


def prefill_value(point: PrefillPoint) -> str:
    """A prefill point's headline: its prompt tok/s ("9,107"), else its status word."""
    if point.status == "Valid" and point.prompt_tok_s is not None:
        return f.prefill_tok_s(point.prompt_tok_s)
    return point.status
