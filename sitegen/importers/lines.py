"""Turn a captured page into logical lines, undoing what captures do to it.

Browsers glue inline elements together ("…length8K context…"), markdown
conversions add list markers and table rules, and some captures drop blank
lines. Every fixed sentence of the page is put back on a line of its own.
"""

from __future__ import annotations

import re

import msgspec

from runner.bundle.display import COLD_TTFT_NOTE, LEGEND, PAGE_TEXT, TTFT_NOTE


class Line(msgspec.Struct, frozen=True):
    """One logical line and the line number it came from in the file."""

    number: int
    text: str


_FIXED = (PAGE_TEXT.prefill_caption, PAGE_TEXT.decode_caption, TTFT_NOTE, COLD_TTFT_NOTE, PAGE_TEXT.table_caption, *LEGEND.values())
_FIXED_RE = re.compile("(" + "|".join(re.escape(s) for s in _FIXED) + ")")
_TABLE_RULE_RE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")
_MARKER_RE = re.compile(r"^(?:#{1,6}\s+|[-*]\s+)")


def logical_lines(text: str) -> list[Line]:
    """Non-empty, stripped lines with fixed sentences split out and markdown markers removed."""
    lines: list[Line] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip().replace("\u00a0", " ")
        if not stripped or _TABLE_RULE_RE.match(stripped):
            continue
        stripped = _MARKER_RE.sub("", stripped).replace("**", "")
        for piece in _FIXED_RE.split(stripped):
            piece = piece.strip()
            if piece:
                lines.append(Line(number, piece))
    return lines
