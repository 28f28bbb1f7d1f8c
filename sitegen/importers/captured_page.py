"""Import a speed test matrix page captured as text: a browser's copy (tab-separated
tables) or a markdown conversion, with or without blank lines.

The "All measurements" table is the source of every number; the title, summary,
prefill items and matrix are then re-rendered from the bundle and compared with
the page, so a capture that disagrees with itself is an error naming the spot.
This module is the importer and turns the page's parts into a bundle; reading the
text is `captured_page_text`'s job, comparing it with the bundle `captured_page_checks`'s.
"""

from __future__ import annotations

import re

import msgspec

from runner.bundle import formats as f
from runner.bundle import schema
from runner.bundle.display import PAGE_TEXT as T
from sitegen.errors import InputError, raise_if_any
from sitegen.importers.captured_page_checks import check_matrix, check_prefill, check_summary
from sitegen.importers.captured_page_text import (
    HEADINGS,
    Cursor,
    parse_block,
    parse_byline,
    parse_launch_command,
    parse_measured,
    parse_sections,
    parse_table,
    split_header,
    take_until,
)
from sitegen.importers.importer import Found, Importer, Source, slug_id
from sitegen.importers.lines import Line, logical_lines
from sitegen.pages.text_page import VERIFICATION_HEADING
from sitegen.views import runview
from sitegen.views.serving_view import SERVING_TEXT

_VRAM_RE = re.compile(r"([\d.]+) GB(?: \((\d+) × ([\d.]+) GB\))?")


def recognises(source: Source) -> bool:
    """Any text that is not JSON is taken for a captured page; one without the page's kicker line is refused."""
    return not source.is_json


def read(source: Source) -> Found:
    """The bundle exactly as the page states it; once valid, its matrix, prefill and summary must agree with its table."""
    cur = Cursor(logical_lines(source.text), source.path)
    start = cur.find(T.kicker)
    if start is None:
        raise InputError(source.path, "line 1", f"not a speed test matrix page: no {T.kicker!r} line")
    cur.i = start + 1
    if cur.done():
        raise cur.error("the page ends after its first line")
    title_line = cur.take()
    header = take_until(cur, HEADINGS)
    fields = parse_sections(cur)
    launch = parse_launch_command(cur)
    prefill_lines = parse_block(cur, T.prefill_heading, T.prefill_caption, (T.decode_heading, T.table_heading))
    matrix_lines = parse_block(cur, T.decode_heading, T.decode_caption, (T.table_heading,))
    if cur.find(T.table_heading) is None:
        raise cur.error(f"no {T.table_heading!r} table: it is the source of the page's numbers")
    # index.txt's panels and its verification follow the table
    table_lines = parse_block(cur, T.table_heading, T.table_caption, (*SERVING_TEXT.headings, VERIFICATION_HEADING))
    prefill, decode = parse_table(table_lines, cur)
    byline, measured_line, summary_lines = split_header(header)
    submitter, origin = parse_byline(byline.text if byline else None)
    bundle = schema.Bundle(
        id="page",
        model="pending",
        measured_at=parse_measured(measured_line, cur),
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
        errors = check_matrix(view, matrix_lines, cur) + check_prefill(view, prefill_lines, cur)
        # The summary restates the matrix's shape, so it is checked only once the cells agree.
        raise_if_any(errors or check_summary(engine_line, view.summary_shape, summary_lines, cur))

    return Found(bundle, name=_page_id, confirm=confirm)


def _page_id(bundle: schema.Bundle) -> str:
    """"model-gpu-x2-2026-09-03" from what the page (and the options) say."""
    date = bundle.measured_at.date().isoformat() if bundle.measured_at else None
    gpus = f"x{bundle.hardware.gpu_count}" if bundle.hardware.gpu_count else None
    return slug_id(bundle.model, bundle.hardware.gpu, gpus, date)


def _field(fields: dict[str, tuple[str, Line]], key: str) -> str | None:
    return fields[key][0] if key in fields else None


def _hardware(fields: dict[str, tuple[str, Line]], cur: Cursor) -> schema.Hardware:
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


def _engine(fields: dict[str, tuple[str, Line]], cur: Cursor) -> schema.Engine:
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


def _setting(fields: dict[str, tuple[str, Line]], key: str, suffix: str, cur: Cursor) -> float | None:
    text = _field(fields, key)
    if text is None:
        return None
    number = text.removesuffix(suffix).replace(",", "")
    try:
        return f.parse_number(number)
    except ValueError:
        raise cur.error(f"{key.split('/')[1]}: expected like '30{suffix}', got {text!r}", fields[key][1]) from None


def _run(fields: dict[str, tuple[str, Line]], cur: Cursor) -> schema.RunInfo:
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


def _model_from_title(bundle: schema.Bundle, line: Line, cur: Cursor) -> str:
    """The model is the title less the hardware suffix the Hardware section implies."""
    suffix = runview.title(msgspec.structs.replace(bundle, model=""))
    if suffix and not line.text.endswith(suffix):
        raise cur.error(f"title {line.text!r} does not end with {suffix!r}, as the Hardware section implies", line)
    model = line.text[: len(line.text) - len(suffix)].strip()
    if not model:
        raise cur.error("the title names no model", line)
    return model


IMPORTER = Importer(name="a captured speed test matrix page", recognises=recognises, read=read)
