"""What a prefill point and a decode cell show, in the pages' words: shared by every page and the
runner's live terminal view, so the terminal and the published page never disagree."""

from __future__ import annotations

from runner.bundle import formats as f
from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint

PREFILL_CAPTION = "prompt tok/s by context length"
DECODE_CAPTION = "total tok/s · rows are context length, columns are simultaneous requests"
# The TTFT line under the matrix. The runner warms each cell's prompts first, as the published pages'
# benchmark does; tools that send cold prompts (their runs record no prefill, PREFILL_NOT_MEASURED)
# time each prompt's prefill in their TTFT, and their pages say so instead.
TTFT_NOTE = "TTFT is measured after the benchmark warms the server's prompt cache, so it mostly excludes prefill."
COLD_TTFT_NOTE = "TTFT includes the prefill of each prompt: the benchmark that measured this run did not warm the server's prompt cache first."
PREFILL_NOT_MEASURED = "Not measured"
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


def ttft_note(bundle: Bundle) -> str:
    """The TTFT line a run's matrix carries: warmed prompts, unless the run was measured cold."""
    return COLD_TTFT_NOTE if bundle.run.prefill_mode == PREFILL_NOT_MEASURED else TTFT_NOTE
