"""The plain-text rendition of a run page (`index.txt`), in the seed pages' tab-separated form.

It holds the same words as the page's #matrix element, one item a line, and
`sitegen import` reads it back into the same bundle; then, where the run records them, the
served facts and the speculative decoding, energy and endpoint panels, and last the run's
verification, under headings the importer stops at.
"""

from __future__ import annotations

from runner.bundle.display import PAGE_TEXT as T
from runner.bundle.terminal_text import printable
from sitegen.pages.verification import Verification
from sitegen.views.runview import RunView
from sitegen.views.serving_view import SERVING_TEXT as S
from sitegen.views.serving_view import ServingView

VERIFICATION_HEADING = "Verification"  # the last block: what the page says at its top of who vouches for the figures


def render_text(view: RunView, serving: ServingView, verification: Verification | None = None) -> str:
    """Render the views as plain text with blank lines between blocks.

    The views' free text (title, engine line, byline, field values, launch command, readings' sources
    and reasons, endpoint URLs: what a bundle names) is shown with its control and reordering characters
    as escapes, so the file prints safely on a terminal and keeps its lines; the rest are the page's
    fixed words, numbers and statuses.
    """
    blocks: list[list[str]] = [[T.kicker], [printable(view.title)], [printable(view.summary_engine), view.summary_shape]]
    byline = [line for line in (view.byline and printable(view.byline), view.measured) if line]
    if byline:
        blocks.append(byline)
    for section in view.sections:
        blocks += [[section.heading], [f"{field.label}: {printable(field.value)}" for field in section.fields]]
    if view.launch_command:
        blocks += [[T.launch_heading], [printable(view.launch_command)]]
    if view.prefill:
        blocks += [[T.prefill_heading], [T.prefill_caption]]
        blocks += [[_join(item.label, item.value, item.ttft)] for item in view.prefill]
    if view.matrix:
        header = "\t".join([T.matrix_corner, *map(str, view.concurrencies)])
        rows = ["\t".join([row.label, *(_join(c.value, c.note, c.ttft) for c in row.cells)]) for row in view.matrix]
        blocks += [[T.decode_heading], [T.decode_caption], [header, *rows]]
        blocks += [[line] for line in view.legend] + [[view.ttft_note]]
    blocks += [[T.table_heading], [T.table_caption], ["\t".join(T.table_header), *("\t".join(r) for r in view.table)]]
    blocks += [[line] for line in view.legend]
    blocks += serving_blocks(serving)
    if verification:
        said = [f"{verification.status}: {printable(verification.sentence)}", *map(printable, verification.problems)]
        blocks += [[VERIFICATION_HEADING], said]
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


def serving_blocks(serving: ServingView) -> list[list[str]]:
    """The served facts and the speculative decoding, energy and endpoint panels, each where it has something."""
    blocks: list[list[str]] = []
    if serving.served:
        blocks += [[S.served_heading], [f"{field.label}: {printable(field.value)}" for field in serving.served]]
    for heading, caption, header, table in ((S.speculative_heading, S.speculative_caption, S.speculative_header, serving.speculative),
                                            (S.energy_heading, S.energy_caption, S.energy_header, serving.energy)):
        if table:
            rows = ["\t".join(map(printable, row.texts)) for row in table.rows]
            blocks += [[heading], [caption], ["\t".join(header), *rows], [f"{S.source} {printable(table.sources)}"]]
    if serving.endpoints:
        blocks += [[S.endpoints_heading], [S.endpoints_caption]]
        blocks += [[cell.cell, *map(printable, cell.lines)] for cell in serving.endpoints]
    return blocks


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)
