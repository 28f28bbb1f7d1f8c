"""Untrusted text made safe to print: no live control characters, no bidi overrides, a bounded length.

Anything a server or a file sends (error bodies, model ids, versions, file names) may carry
escape sequences that clear a screen, set a window title or fake a line of output, and bidi
controls that reorder what follows them. `printable` shows each such character as a visible
escape (`\\x1b`, `\\u202e`) instead, so the text reads the same but does nothing; the runner's
terminal lines, `runner probe`, sitegen's errors and every plain-text output go through it.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the Unicode format characters that reorder or hide text: bidi
# embeddings, overrides and isolates, marks, zero-width joiners and spaces, line and paragraph
# separators, the byte-order mark and the interlinear annotation characters.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: int | None = None, keep_newlines: bool = False) -> str:
    """`text` with every control and reordering character shown as an escape, cut to `limit` characters.

    With `keep_newlines`, line breaks stay (for multi-line output such as a server's log tail).
    A cut text ends in "…" and says how many characters were left out.
    """
    if limit is not None and len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    if keep_newlines:
        return "\n".join(_UNSAFE.sub(_escape, line) for line in text.split("\n"))
    return _UNSAFE.sub(_escape, text)
