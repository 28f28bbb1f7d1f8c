"""What a prefill point and a decode cell show, in the pages' words: shared by every page and the
runner's live terminal view, so the terminal and the published page never disagree."""

from __future__ import annotations

import msgspec

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
# Legend lines in the order the published pages print them; a page shows those of its statuses.
LEGEND: dict[str, str] = {
    "Requests queued": "Requests queued: the server could not run all requests at once, so some waited in a queue.",
    "Distorted": "Distorted: the client's timings disagreed with the server's own accounting, or the client "
                 "fell behind, in every try; the figures are shown as measured but are not to be relied on.",
    "Looped": "Looped: the model kept repeating the same text, so the benchmark discarded this measurement.",
    "Over capacity": "Over capacity: not run because this many requests at this context would exceed the server's KV cache.",
    "Failed": "Failed: the requests errored or timed out, so this cell holds no measurement.",
}


class PageText(msgspec.Struct, frozen=True, kw_only=True):
    """The fixed words of a run page's #matrix element, in page order.

    The templates get them as the Jinja global `page_text` and the page importer looks for the
    same ones, so a site restyled with --templates still imports back.
    """

    kicker: str
    launch_heading: str
    prefill_heading: str
    prefill_caption: str
    decode_heading: str
    decode_caption: str
    matrix_corner: str  # the heading of the matrix's column of context labels
    table_heading: str
    table_caption: str
    table_header: tuple[str, ...]


PAGE_TEXT = PageText(
    kicker="Speed test matrix",
    launch_heading="Launch command",
    prefill_heading="Prefill",
    prefill_caption=PREFILL_CAPTION,
    decode_heading="Sustained decode",
    decode_caption=DECODE_CAPTION,
    matrix_corner="Context",
    table_heading="All measurements",
    table_caption="Latencies are medians. Total tok/s is output across all simultaneous requests.",
    table_header=(
        "Phase", "Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s", "TTFT",
        "Time between tokens", "Average active requests", "Completed requests", "Output tokens", "Measured for",
    ),
)


def has_value(cell: DecodeCell) -> bool:
    """A decode cell holds a usable total tok/s: Valid or Requests queued, with a number."""
    return cell.status in VALUED and cell.total_tok_s is not None


def prefill_has_value(point: PrefillPoint) -> bool:
    """A prefill point holds a usable prompt tok/s."""
    return point.status in VALUED and point.prompt_tok_s is not None


def status_slug(status: str, separator: str = "-") -> str:
    """A status as a name in CSS or CSV: "Over capacity" -> "over-capacity" (or "over_capacity")."""
    return status.lower().replace(" ", separator)


def shows_figures(cell: DecodeCell) -> bool:
    """Whether a cell prints its total tok/s (and TTFT) rather than only its status word."""
    return has_value(cell) or (cell.status == DISTORTED and cell.total_tok_s is not None)


def prefill_value(point: PrefillPoint) -> str:
    """A prefill point's headline: its prompt tok/s ("9,107"), else its status word."""
    if point.status == "Valid" and point.prompt_tok_s is not None:
        return f.prefill_tok_s(point.prompt_tok_s)
    return point.status


def ttft_note(bundle: Bundle) -> str:
    """The TTFT line a run's matrix carries: warmed prompts, unless the run was measured cold."""
    return COLD_TTFT_NOTE if bundle.run.prefill_mode == PREFILL_NOT_MEASURED else TTFT_NOTE
