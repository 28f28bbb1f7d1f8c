"""The plain-text rendition of a run page (`index.txt`), in the seed pages' tab-separated form.

It holds the same words as the page's #matrix element, one item a line, and
`sitegen import` reads it back into the same bundle.
"""

from __future__ import annotations

from runner.bundle.display import PAGE_TEXT as T
from sitegen.runview import RunView


def render_text(view: RunView) -> str:
    """Render the view as plain text with blank lines between blocks."""
    blocks: list[list[str]] = [[T.kicker], [view.title], [view.summary_engine, view.summary_shape]]
    byline = [line for line in (view.byline, view.measured) if line]
    if byline:
        blocks.append(byline)
    for section in view.sections:
        blocks += [[section.heading], [f"{field.label}: {field.value}" for field in section.fields]]
    if view.launch_command:
        blocks += [[T.launch_heading], [view.launch_command]]
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
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)
