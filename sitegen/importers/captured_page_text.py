"""Read a captured speed test matrix page's text into its parts: the header, the
Hardware, Engine and Run fields, the launch command, the prefill, matrix and
"All measurements" blocks, and the measurements table's rows.

Every error names the file and line it was found on, through the `Cursor`.
"""

from __future__ import annotations

import re
from pathlib import Path

from runner.bundle import formats as f
from runner.bundle import schema
from runner.bundle.display import LEGEND
from runner.bundle.display import PAGE_TEXT as T
from sitegen.errors import InputError
from sitegen.importers.importer import checked_date
from sitegen.importers.lines import Line
from sitegen.views.runview import SECTION_LABELS

HEADINGS = (*SECTION_LABELS, T.launch_heading, T.prefill_heading, T.decode_heading, T.table_heading)
# A heading that a capture glued to the end of the line before it, keyed by the caption after it.
CAPTION_OF = {T.prefill_heading: T.prefill_caption, T.decode_heading: T.decode_caption, T.table_heading: T.table_caption}

_STATUS = "|".join(re.escape(s) for s in schema.STATUSES)
_PHASE = "|".join(re.escape(s) for s in (T.prefill_heading, T.decode_heading))
_ROW_RE = re.compile(rf"^({_PHASE}) (\S+) ([\d,]+) ({_STATUS})(?: (.*))?$")
_VALUE_RE = re.compile(r"—|-|[\d,]+(?:\.\d+)?K?(?: ms| s)?")


class Cursor:
    """Walks the logical lines of one page, remembering where errors are."""

    def __init__(self, lines: list[Line], path: Path) -> None:
        self.lines = lines
        self.path = path
        self.i = 0

    def peek(self, ahead: int = 0) -> Line | None:
        j = self.i + ahead
        return self.lines[j] if j < len(self.lines) else None

    def take(self) -> Line:
        line = self.lines[self.i]
        self.i += 1
        return line

    def done(self) -> bool:
        return self.i >= len(self.lines)

    def error(self, message: str, line: Line | None = None) -> InputError:
        target = line or self.peek() or (self.lines[-1] if self.lines else None)
        return InputError(self.path, f"line {target.number}" if target else None, message)

    def find(self, text: str) -> int | None:
        """Index of the first line at or after the cursor equal to text."""
        return next((j for j in range(self.i, len(self.lines)) if self.lines[j].text == text), None)


def take_until(cur: Cursor, stops: tuple[str, ...]) -> list[Line]:
    taken = []
    while not cur.done() and cur.peek().text not in stops:
        taken.append(cur.take())
    return taken


def parse_sections(cur: Cursor) -> dict[str, tuple[str, Line]]:
    """The label/value pairs of Hardware, Engine and Run, keyed "Section/Label"."""
    fields: dict[str, tuple[str, Line]] = {}
    while not cur.done() and cur.peek().text in SECTION_LABELS:
        section = cur.take().text
        labels = SECTION_LABELS[section]
        while not cur.done():
            line = cur.peek()
            if line.text in HEADINGS and not (line.text in labels and f"{section}/{line.text}" not in fields):
                break
            cur.take()
            label, value = _split_pair(line, labels, cur)
            key = f"{section}/{label}"
            if key in fields:
                raise cur.error(f"{section} lists {label!r} twice", line)
            fields[key] = (value, line)
    return fields


def _split_pair(line: Line, labels: tuple[str, ...], cur: Cursor) -> tuple[str, str]:
    """"Label: value" on one line, or the label alone with its value on the next line."""
    for label in labels:
        if line.text == label or line.text == f"{label}:":
            if cur.done():
                raise cur.error(f"{label!r} has no value", line)
            return label, cur.take().text
        for sep in (": ", ":\t", "\t"):
            if line.text.startswith(label + sep):
                return label, line.text[len(label) + len(sep):].strip()
    raise cur.error(f"unexpected line {line.text[:60]!r}: expected one of {', '.join(labels)}", line)


def parse_launch_command(cur: Cursor) -> str | None:
    """Everything between "Launch command" and the next section heading, verbatim."""
    if cur.done() or cur.peek().text != "Launch command":
        return None
    cur.take()
    parts: list[str] = []
    while not cur.done():
        line = cur.peek()
        if line.text in HEADINGS[4:]:
            break
        glued = next((h for h, cap in CAPTION_OF.items() if line.text.endswith(h) and _next_is(cur, cap)), None)
        cur.take()
        if glued:
            parts.append(line.text[: -len(glued)])
            cur.lines.insert(cur.i, Line(line.number, glued))
            break
        parts.append(line.text)
    command = "\n".join(parts).strip()
    return command or None


def _next_is(cur: Cursor, text: str) -> bool:
    nxt = cur.peek(1)
    return nxt is not None and nxt.text == text


def parse_block(cur: Cursor, heading: str, caption: str, stops: tuple[str, ...]) -> list[Line]:
    """The lines of an optional section after its heading and caption."""
    if cur.done() or cur.peek().text != heading:
        return []
    cur.take()
    if not cur.done() and cur.peek().text == caption:
        cur.take()
    return take_until(cur, stops)


def _parse_value(token: str, unit: str, where: Line, cur: Cursor, column: str) -> float | None:
    if token in ("—", "-"):
        return None
    if unit and not token.endswith(unit):
        raise cur.error(f"{column}: expected a value in{unit}, got {token!r}", where)
    number = token[: -len(unit)] if unit else token
    try:
        return f.parse_tok_s(number)
    except ValueError:
        raise cur.error(f"{column}: not a number: {token!r}", where) from None


def _parse_int(token: str, where: Line, cur: Cursor, column: str) -> int | None:
    value = _parse_value(token, "", where, cur, column)
    if value is not None and value != int(value):
        raise cur.error(f"{column}: expected a whole number, got {token!r}", where)
    return None if value is None else int(value)


_COLUMNS = (
    ("Total tok/s", ""), ("Per request tok/s", ""), ("TTFT", " ms"), ("Time between tokens", " ms"),
    ("Average active requests", ""), ("Completed requests", ""), ("Output tokens", ""), ("Measured for", " s"),
)


def parse_table(lines: list[Line], cur: Cursor) -> tuple[list[schema.PrefillPoint], list[schema.DecodeCell]]:
    """Rows of "All measurements": the source of every number on the page."""
    prefill: list[schema.PrefillPoint] = []
    decode: list[schema.DecodeCell] = []
    for line in lines:
        text = " ".join(line.text.replace("|", " ").split())
        if text.startswith(T.table_header[0] + " ") or text in LEGEND.values() or not text:
            continue
        match = _ROW_RE.match(text)
        if not match:
            raise cur.error(f"All measurements: cannot read row {text[:60]!r}", line)
        phase, label, at_once, status, rest = match.groups()
        tokens = _VALUE_RE.findall(rest or "")
        if len(tokens) != len(_COLUMNS):
            raise cur.error(f"All measurements: expected {len(_COLUMNS)} values after the status, found {len(tokens)}", line)
        values = [_parse_value(t, unit, line, cur, col) for t, (col, unit) in zip(tokens, _COLUMNS)]
        try:
            context = f.parse_context_label(label)
        except ValueError:
            raise cur.error(f"All measurements: not a context length: {label!r}", line) from None
        if phase == T.prefill_heading:
            prefill.append(schema.PrefillPoint(context_tokens=context, status=status, prompt_tok_s=values[0], ttft_ms=values[2]))
            continue
        decode.append(schema.DecodeCell(
            context_tokens=context, concurrency=int(at_once.replace(",", "")), status=status,
            total_tok_s=values[0], per_request_tok_s=values[1], ttft_ms=values[2], tbt_ms=values[3],
            avg_active=values[4], completed=_parse_int(tokens[5], line, cur, "Completed requests"),
            output_tokens=_parse_int(tokens[6], line, cur, "Output tokens"), measured_s=values[7],
        ))
    if not prefill and not decode:
        raise cur.error(f"{T.table_heading}: the table has no rows")
    return prefill, decode


def split_header(header: list[Line]) -> tuple[Line | None, Line | None, list[Line]]:
    """Byline, "Measured …" line and summary lines of the header (a capture may glue them)."""
    byline = measured = None
    summary: list[Line] = []
    for line in header:
        text = line.text
        at = text.find("Measured ")
        if at >= 0 and f.DATE_RE.search(text[at:]):
            measured = Line(line.number, text[at:])
            text = text[:at].strip()
        if text.startswith("by "):
            byline = Line(line.number, text)
        elif text:
            summary.append(Line(line.number, text))
    return byline, measured, summary


def parse_byline(text: str | None) -> tuple[str | None, str | None]:
    """"by @handle dev import" -> ("@handle", "dev import")."""
    if not text:
        return None, None
    words = text[3:].split(None, 1)
    if words and words[0].startswith("@"):
        return words[0], (words[1] if len(words) > 1 else None)
    return None, text[3:].strip() or None


def parse_measured(line: Line | None, cur: Cursor) -> object:
    if line is None:
        return None
    try:
        moment = f.parse_measured_at(line.text.removeprefix("Measured "))
    except ValueError as exc:
        raise cur.error(str(exc), line) from None
    return checked_date(moment, cur.path, f"line {line.number}")
