"""Import a speed test matrix page captured as text: a browser's copy (tab-separated
tables) or a markdown conversion, with or without blank lines.

The "All measurements" table is the source of every number; the title, summary,
prefill items and matrix are then re-rendered from the bundle and compared with
the page, so a capture that disagrees with itself is an error naming the spot.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from runner.bundle import formats as f
from runner.bundle import schema
from runner.bundle.display import COLD_TTFT_NOTE, LEGEND
from runner.bundle.display import PAGE_TEXT as T
from runner.bundle.display import TTFT_NOTE
from sitegen.errors import InputError, raise_if_any
from sitegen.importers.importer import Found, Importer, Source, checked_date, slug_id
from sitegen.importers.lines import Line, logical_lines
from sitegen.views import runview
from sitegen.views.runview import SECTION_LABELS
from sitegen.views.serving_view import SERVING_TEXT

HEADINGS = (*SECTION_LABELS, T.launch_heading, T.prefill_heading, T.decode_heading, T.table_heading)
# A heading that a capture glued to the end of the line before it, keyed by the caption after it.
CAPTION_OF = {T.prefill_heading: T.prefill_caption, T.decode_heading: T.decode_caption, T.table_heading: T.table_caption}

_STATUS = "|".join(re.escape(s) for s in schema.STATUSES)
_PHASE = "|".join(re.escape(s) for s in (T.prefill_heading, T.decode_heading))
_ROW_RE = re.compile(rf"^({_PHASE}) (\S+) ([\d,]+) ({_STATUS})(?: (.*))?$")
_VALUE_RE = re.compile(r"—|-|[\d,]+(?:\.\d+)?K?(?: ms| s)?")
_VRAM_RE = re.compile(r"([\d.]+) GB(?: \((\d+) × ([\d.]+) GB\))?")
_ITEM_RE = re.compile(r"(\d+(?:\.\d+)?K?)context(.*?)(?=\d+(?:\.\d+)?K?context|$)")


class _Cursor:
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


def recognises(source: Source) -> bool:
    """Any text that is not JSON is taken for a captured page; one without the page's kicker line is refused."""
    return not source.is_json


def read(source: Source) -> Found:
    """The bundle exactly as the page states it; once valid, its matrix, prefill and summary must agree with its table."""
    cur = _Cursor(logical_lines(source.text), source.path)
    start = cur.find(T.kicker)
    if start is None:
        raise InputError(source.path, "line 1", f"not a speed test matrix page: no {T.kicker!r} line")
    cur.i = start + 1
    if cur.done():
        raise cur.error("the page ends after its first line")
    title_line = cur.take()
    header = _take_until(cur, HEADINGS)
    fields = _parse_sections(cur)
    launch = _parse_launch_command(cur)
    prefill_lines = _parse_block(cur, T.prefill_heading, T.prefill_caption, (T.decode_heading, T.table_heading))
    matrix_lines = _parse_block(cur, T.decode_heading, T.decode_caption, (T.table_heading,))
    if cur.find(T.table_heading) is None:
        raise cur.error(f"no {T.table_heading!r} table: it is the source of the page's numbers")
    table_lines = _parse_block(cur, T.table_heading, T.table_caption, SERVING_TEXT.headings)  # index.txt's panels follow
    prefill, decode = _parse_table(table_lines, cur)
    byline, measured_line, summary_lines = _split_header(header)
    submitter, origin = _parse_byline(byline.text if byline else None)
    bundle = schema.Bundle(
        id="page",
        model="pending",
        measured_at=_parse_measured(measured_line, cur),
        submitter=submitter,
        origin=origin,
        hardware=_hardware(fields, cur),
        engine=_engine(fields, cur),
        run=_run(fields, cur),
        launch_command=launch,
        prefill=prefill,
        decode=decode,
    )
    bundle = msgspec.structs.replace(bundle, model=_model_from_title(bundle, title_line, cur))
    engine_line = runview.summary_engine(bundle)  # as the page states it, whatever --engine-name says

    def confirm(valid: schema.Bundle) -> None:
        view = runview.run_view(valid)
        errors = _check_matrix(view, matrix_lines, cur) + _check_prefill(view, prefill_lines, cur)
        # The summary restates the matrix's shape, so it is checked only once the cells agree.
        raise_if_any(errors or _check_summary(engine_line, view.summary_shape, summary_lines, cur))

    return Found(bundle, name=_page_id, confirm=confirm)


def _page_id(bundle: schema.Bundle) -> str:
    """"model-gpu-x2-2026-09-03" from what the page (and the options) say."""
    date = bundle.measured_at.date().isoformat() if bundle.measured_at else None
    gpus = f"x{bundle.hardware.gpu_count}" if bundle.hardware.gpu_count else None
    return slug_id(bundle.model, bundle.hardware.gpu, gpus, date)


def _take_until(cur: _Cursor, stops: tuple[str, ...]) -> list[Line]:
    taken = []
    while not cur.done() and cur.peek().text not in stops:
        taken.append(cur.take())
    return taken


def _parse_sections(cur: _Cursor) -> dict[str, tuple[str, Line]]:
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


def _split_pair(line: Line, labels: tuple[str, ...], cur: _Cursor) -> tuple[str, str]:
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


def _parse_launch_command(cur: _Cursor) -> str | None:
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


def _next_is(cur: _Cursor, text: str) -> bool:
    nxt = cur.peek(1)
    return nxt is not None and nxt.text == text


def _parse_block(cur: _Cursor, heading: str, caption: str, stops: tuple[str, ...]) -> list[Line]:
    """The lines of an optional section after its heading and caption."""
    if cur.done() or cur.peek().text != heading:
        return []
    cur.take()
    if not cur.done() and cur.peek().text == caption:
        cur.take()
    return _take_until(cur, stops)


def _parse_value(token: str, unit: str, where: Line, cur: _Cursor, column: str) -> float | None:
    if token in ("—", "-"):
        return None
    if unit and not token.endswith(unit):
        raise cur.error(f"{column}: expected a value in{unit}, got {token!r}", where)
    number = token[: -len(unit)] if unit else token
    try:
        return f.parse_tok_s(number)
    except ValueError:
        raise cur.error(f"{column}: not a number: {token!r}", where) from None


def _parse_int(token: str, where: Line, cur: _Cursor, column: str) -> int | None:
    value = _parse_value(token, "", where, cur, column)
    if value is not None and value != int(value):
        raise cur.error(f"{column}: expected a whole number, got {token!r}", where)
    return None if value is None else int(value)


_COLUMNS = (
    ("Total tok/s", ""), ("Per request tok/s", ""), ("TTFT", " ms"), ("Time between tokens", " ms"),
    ("Average active requests", ""), ("Completed requests", ""), ("Output tokens", ""), ("Measured for", " s"),
)


def _parse_table(lines: list[Line], cur: _Cursor) -> tuple[list[schema.PrefillPoint], list[schema.DecodeCell]]:
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


def _split_header(header: list[Line]) -> tuple[Line | None, Line | None, list[Line]]:
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


def _parse_byline(text: str | None) -> tuple[str | None, str | None]:
    """"by @handle dev import" -> ("@handle", "dev import")."""
    if not text:
        return None, None
    words = text[3:].split(None, 1)
    if words and words[0].startswith("@"):
        return words[0], (words[1] if len(words) > 1 else None)
    return None, text[3:].strip() or None


def _parse_measured(line: Line | None, cur: _Cursor) -> object:
    if line is None:
        return None
    try:
        moment = f.parse_measured_at(line.text.removeprefix("Measured "))
    except ValueError as exc:
        raise cur.error(str(exc), line) from None
    return checked_date(moment, cur.path, f"line {line.number}")


def _field(fields: dict[str, tuple[str, Line]], key: str) -> str | None:
    return fields[key][0] if key in fields else None


def _hardware(fields: dict[str, tuple[str, Line]], cur: _Cursor) -> schema.Hardware:
    count_text = _field(fields, "Hardware/GPU count")
    gpu_count = None
    if count_text is not None:
        if not count_text.isdigit():
            raise cur.error(f"GPU count: expected a whole number, got {count_text!r}", fields["Hardware/GPU count"][1])
        gpu_count = int(count_text)
    per_gpu = None
    vram_text = _field(fields, "Hardware/VRAM")
    if vram_text is not None:
        match = _VRAM_RE.fullmatch(vram_text)
        if not match:
            raise cur.error(f"VRAM: expected like '282 GB (2 × 141 GB)', got {vram_text!r}", fields["Hardware/VRAM"][1])
        per_gpu = float(match.group(3) or match.group(1))
    return schema.Hardware(
        type=_field(fields, "Hardware/Type"),
        gpu=_field(fields, "Hardware/GPU"),
        gpu_count=gpu_count,
        vram_per_gpu_gb=per_gpu,
        os=_field(fields, "Hardware/OS"),
    )


def _engine(fields: dict[str, tuple[str, Line]], cur: _Cursor) -> schema.Engine:
    name = _field(fields, "Engine/Engine")
    if not name:
        raise cur.error("the Engine section has no 'Engine' name")
    return schema.Engine(
        name=name,
        version=_field(fields, "Engine/Version"),
        quantization=_field(fields, "Engine/Quantization"),
        backend=_field(fields, "Engine/Backend"),
        repository=_field(fields, "Engine/Repository"),
        build=_field(fields, "Engine/Build"),
        commit=_field(fields, "Engine/Commit"),
    )


def _setting(fields: dict[str, tuple[str, Line]], key: str, suffix: str, cur: _Cursor) -> float | None:
    text = _field(fields, key)
    if text is None:
        return None
    number = text.removesuffix(suffix).replace(",", "")
    try:
        return f.parse_number(number)
    except ValueError:
        raise cur.error(f"{key.split('/')[1]}: expected like '30{suffix}', got {text!r}", fields[key][1]) from None


def _run(fields: dict[str, tuple[str, Line]], cur: _Cursor) -> schema.RunInfo:
    max_output = _setting(fields, "Run/Max output", " tokens", cur)
    return schema.RunInfo(
        served_model=_field(fields, "Run/Served model"),
        revision=_field(fields, "Run/Revision"),
        benchmark_tool=_field(fields, "Run/Benchmark tool"),
        decode_test=_field(fields, "Run/Decode test"),
        prefill_mode=_field(fields, "Run/Prefill mode"),
        seconds_per_measurement=_setting(fields, "Run/Time per measurement", " s", cur),
        max_output_tokens=int(max_output) if max_output is not None else None,
    )


def _model_from_title(bundle: schema.Bundle, line: Line, cur: _Cursor) -> str:
    """The model is the title less the hardware suffix the Hardware section implies."""
    suffix = runview.title(msgspec.structs.replace(bundle, model=""))
    if suffix and not line.text.endswith(suffix):
        raise cur.error(f"title {line.text!r} does not end with {suffix!r}, as the Hardware section implies", line)
    model = line.text[: len(line.text) - len(suffix)].strip()
    if not model:
        raise cur.error("the title names no model", line)
    return model


def _squash(text: str) -> str:
    """Text without whitespace or table punctuation, for comparing captures."""
    return re.sub(r"[\s|]+", "", text)


def _check_summary(engine: str, shape: str, lines: list[Line], cur: _Cursor) -> list[InputError]:
    """The summary line must be the engine line and the shape of the matrix and prefill."""
    shown = "".join(line.text for line in lines)
    if _squash(shown) == _squash(engine + shape):
        return []
    where = lines[0] if lines else None
    return [cur.error(f"summary line {shown[:80]!r} disagrees with the page's data: expected {engine!r} then {shape!r}", where)]


def _check_prefill(view: runview.RunView, lines: list[Line], cur: _Cursor) -> list[InputError]:
    """Each prefill item must say what the All measurements row for its context says."""
    shown = {m.group(1): m.group(2) for m in _ITEM_RE.finditer(_squash("".join(line.text for line in lines)))}
    errors = []
    where = lines[0] if lines else None
    for item in view.prefill:
        label = item.label.removesuffix(" context")
        expected = _squash(item.value + item.ttft)
        if label not in shown:
            errors.append(cur.error(f"prefill item {item.label!r} is missing", where))
        elif shown[label] != expected:
            errors.append(cur.error(f"prefill item {item.label!r} shows {shown[label]!r} but All measurements says {expected!r}", where))
    extra = set(shown) - {i.label.removesuffix(" context") for i in view.prefill}
    errors += [cur.error(f"prefill item '{label} context' has no row in All measurements", where) for label in sorted(extra)]
    return errors


def _check_matrix(view: runview.RunView, lines: list[Line], cur: _Cursor) -> list[InputError]:
    """Each matrix cell must say what the All measurements row for that cell says."""
    rows = {}
    for line in lines:
        text = line.text
        if text in LEGEND.values() or text in (TTFT_NOTE, COLD_TTFT_NOTE):
            continue
        cells = [c.strip() for c in re.split(r"\t|\|", text.strip().strip("|"))]
        if cells and cells[0] == T.matrix_corner:
            continue
        label = cells[0].split()[0] if cells and cells[0] else ""
        rows[label] = (line, cells)
    errors = []
    for row in view.matrix:
        if row.label not in rows:
            errors.append(cur.error(f"matrix row {row.label!r} is missing", lines[0] if lines else None))
            continue
        line, cells = rows.pop(row.label)
        expected = [_squash(c.text) for c in row.cells]
        errors += _compare_cells(row, line, cells, expected, cur)
    errors += [cur.error(f"matrix row {label!r} has no rows in All measurements", line) for label, (line, _) in rows.items()]
    return errors


def _compare_cells(row: runview.MatrixRow, line: Line, cells: list[str], expected: list[str], cur: _Cursor) -> list[InputError]:
    """Cell by cell where the capture kept its separators, else the row as a whole."""
    if len(cells) == len(expected) + 1:
        return [
            cur.error(f"matrix cell {row.label} × {c.concurrency} shows {got!r} but All measurements says {want!r}", line)
            for c, got, want in zip(row.cells, (_squash(x) for x in cells[1:]), expected)
            if got != want
        ]
    shown = _squash(line.text)[len(row.label):]
    if shown == "".join(expected):
        return []
    for c, want in zip(row.cells, expected):
        if not shown.startswith(want):
            return [cur.error(f"matrix cell {row.label} × {c.concurrency} shows {shown[:len(want)]!r}… but All measurements says {want!r}", line)]
        shown = shown[len(want):]
    return [cur.error(f"matrix row {row.label} has more cells than All measurements", line)]


IMPORTER = Importer(name="a captured speed test matrix page", recognises=recognises, read=read)
