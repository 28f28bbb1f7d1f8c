"""Import llm-inference-bench's `benchmark_results.json` as a bundle, detected by content.

Mapping choices follow the bundle's definitions (medians, tokens counted from usage): the
report's "LLM inference bench import" section lists them field by field. The file is decoded
with msgspec Structs, so a missing or mistyped field is one error naming its `$.path`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

from runner.bundle import schema
from runner.bundle.schema import Text
from sitegen.errors import InputError
from sitegen.importers.importer import (
    AtLeastOne,
    Figure,
    Found,
    Importer,
    Name,
    Source,
    Whole,
    decode,
    slug_id,
    utc_moment,
)

TOOL = "llm-inference-bench"
DECODE_TESTS = {"duration": "Fixed duration", "request-count": "Fixed request count"}
PREFILL_MODES = {
    "integrated_decode_scout": "Measured during decode warm-up",
    "standalone_cold": "Separate cold requests",
    "skipped": "Not measured",
}
# The tool logs "startup engine vLLM 0.11.0 models=[...]"; the version is nowhere else.
ENGINE_EVENT = re.compile(r"\bstartup engine \S+ (\S+) models=")
CONTEXT_ZERO_NOTE = "Context-0 cells of the llm-inference-bench file are not imported: a bundle's contexts start at 1 token."
# The tool's p90 and p99 of TTFT and time between tokens (seconds), and the bundle's fields for them (ms).
TAILS = (("ttft_p90", "ttft_p90_ms"), ("ttft_p99", "ttft_p99_ms"),
         ("inter_token_latency_p90", "tbt_p90_ms"), ("inter_token_latency_p99", "tbt_p99_ms"))

Cell = tuple[int, int]


class Metadata(msgspec.Struct, kw_only=True):
    """How the run was set up."""

    version: str
    engine: Name
    model: Name
    timestamp: str | None = None  # local time of the benchmark machine, without a zone
    decode_mode: Literal["duration", "request-count"]
    prefill_mode: Literal["integrated_decode_scout", "standalone_cold", "skipped"]
    duration_per_test: Figure | None = None  # needed when decode_mode is "duration"
    max_tokens: AtLeastOne
    max_total_tokens: int | None = None  # the KV budget in tokens; 0 or less: none known
    metrics_available: bool | None = None
    context_lengths: list[Whole]
    concurrency_levels: list[AtLeastOne]


class Diagnostics(msgspec.Struct, kw_only=True):
    """What the tool recorded of the server machine: only its uname is kept."""

    uname: str = ""


class Result(msgspec.Struct, kw_only=True):
    """One entry of `results`: what decides a cell's status."""

    context_tokens: Whole
    concurrency: AtLeastOne
    loop_detected: bool = False
    error: Text | None = None
    aggregate_tps: float | None  # null or negative: the tool skipped the cell
    capacity_limited: bool | None = None


class Measured(msgspec.Struct, kw_only=True):
    """The figures of a result that holds a measurement (seconds, as the tool writes them); TAILS where present."""

    aggregate_tps: Figure
    num_errors: Whole
    total_tokens: Whole
    timeout_reason: Text | None = None
    capacity_limited: bool
    max_queue_reqs: Figure
    ttft_p50: Figure
    inter_token_latency_p50: Figure
    output_tps_per_user_p50: Figure
    input_seq_len_avg: Figure | None
    avg_running_reqs: Figure | None = None  # needed when the server's metrics were available
    completed_request_count: Whole
    measurement_seconds: Figure


class PrefillEntry(msgspec.Struct, kw_only=True):
    """One context of `prefill`: one prompt of that length, its prompt tok/s and its TTFT.

    The tool writes zeros for a context it could not measure; the point is then Failed.
    """

    tok_per_sec: Figure
    ttft_seconds: Figure
    prompt_tokens: Whole


class Report(msgspec.Struct, kw_only=True):
    """The whole file; the tables keyed by token counts are read entry by entry, so errors name the key."""

    metadata: Metadata
    prefill: dict[str, Any]
    results: list[Result]
    summary_table: dict[str, Any]
    event_log: list[str] = []
    startup_diagnostics: Diagnostics = msgspec.field(default_factory=Diagnostics)


def recognises(source: Source) -> bool:
    """llm-inference-bench output: metadata with version and engine, plus its result keys."""
    data = source.data
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        return False
    metadata = data["metadata"]
    has_results = any(key in data for key in ("prefill", "results", "summary_table"))
    return "version" in metadata and "engine" in metadata and has_results


def read(source: Source) -> Found:
    """The bundle for one llm-inference-bench file, as the file states it."""
    report = decode(source.data, Report, source.path)
    meta = report.metadata
    prefill, prefill_dropped = _prefill(report.prefill, source)
    decode_cells, decode_dropped = _decode(report, source)
    measured_at = utc_moment(meta.timestamp, source.path, "$.metadata.timestamp")
    found = schema.Bundle(
        id="file",
        model=meta.model,
        measured_at=measured_at,
        origin=f"{TOOL} import",
        hardware=schema.Hardware(os="linux" if report.startup_diagnostics.uname.startswith("Linux") else None),
        engine=schema.Engine(name=meta.engine, version=_engine_version(report.event_log)),
        run=_run_info(meta, source),
        notes=CONTEXT_ZERO_NOTE if prefill_dropped or decode_dropped else None,
        prefill=prefill,
        decode=decode_cells,
    )
    date = measured_at.date().isoformat() if measured_at else None
    return Found(found, name=lambda bundle: slug_id(bundle.model, bundle.hardware.gpu, bundle.engine.name, date))


def _engine_version(events: list[str]) -> str | None:
    """The version from the "startup engine <name> <version> models=" event, if logged."""
    for event in events:
        match = ENGINE_EVENT.search(event)
        if match and match.group(1) != "?":
            return match.group(1)
    return None


def _run_info(meta: Metadata, source: Source) -> schema.RunInfo:
    """How the run was measured, in the words the pages use."""
    seconds = None
    if meta.decode_mode == "duration":
        if meta.duration_per_test is None:
            raise InputError(source.path, "$.metadata.duration_per_test", "missing: a run of decode_mode \"duration\" states it")
        seconds = meta.duration_per_test
    return schema.RunInfo(
        served_model=meta.model,
        benchmark_tool=f"{TOOL} v{meta.version}",
        decode_test=DECODE_TESTS[meta.decode_mode],
        prefill_mode=PREFILL_MODES[meta.prefill_mode],
        seconds_per_measurement=seconds,
        max_output_tokens=meta.max_tokens,
    )


def _context(key: str, where: str, source: Source) -> int:
    """A token count written as an object key ("4096")."""
    if not (key.isascii() and key.isdigit()):
        raise InputError(source.path, where, f"expected a token count as key, got {key!r}")
    return int(key)


def _prefill(table: dict[str, Any], source: Source) -> tuple[list[schema.PrefillPoint], bool]:
    """One point per context of `prefill`, sorted; also whether a context-0 entry was dropped."""
    points: list[schema.PrefillPoint] = []
    dropped = False
    for key, value in table.items():
        where = f"$.prefill.{key}"
        context = _context(key, where, source)
        entry = decode(value, PrefillEntry, source.path, at=where)
        if context == 0:
            dropped = True
        elif entry.tok_per_sec == 0 or entry.ttft_seconds == 0:
            points.append(schema.PrefillPoint(context_tokens=context, status="Failed", error="no prefill measurement recorded (0 tok/s)"))
        else:
            points.append(schema.PrefillPoint(context_tokens=context, status="Valid", prompt_tok_s=entry.tok_per_sec,
                                       ttft_ms=entry.ttft_seconds * 1000, prompt_tokens=entry.prompt_tokens))
    return sorted(points, key=lambda p: p.context_tokens), dropped


def _decode(report: Report, source: Source) -> tuple[list[schema.DecodeCell], bool]:
    """Every planned or measured cell, sorted by context then concurrency; also whether context-0 cells were dropped."""
    meta = report.metadata
    measured = _results_by_cell(report.results, source)
    planned = {(c, n) for c in meta.context_lengths for n in meta.concurrency_levels} | _summary_cells(report.summary_table, source)
    budget = meta.max_total_tokens or 0
    every = planned | measured.keys()
    cells: list[schema.DecodeCell] = []
    for context, concurrency in sorted(every):
        if context == 0:
            continue
        if (context, concurrency) in measured:
            cells.append(_measured_cell(*measured[(context, concurrency)], meta, source))
        else:
            fits = budget <= 0 or concurrency * (context + meta.max_tokens) <= budget
            cells.append(_absent_cell(context, concurrency, fits))
    return cells, any(context == 0 for context, _ in every)


def _results_by_cell(results: list[Result], source: Source) -> dict[Cell, tuple[int, Result]]:
    """`results` keyed by (context, concurrency), each with its index; a cell twice is an error."""
    cells: dict[Cell, tuple[int, Result]] = {}
    for i, result in enumerate(results):
        cell = (result.context_tokens, result.concurrency)
        if cell in cells:
            raise InputError(source.path, f"$.results[{i}]", f"second result for context {cell[0]}, concurrency {cell[1]} "
                                                            f"(first: $.results[{cells[cell][0]}])")
        cells[cell] = (i, result)
    return cells


def _summary_cells(table: dict[str, Any], source: Source) -> set[Cell]:
    """The cells `summary_table` names ({context: {concurrency: tok/s or null}})."""
    cells: set[Cell] = set()
    for key, value in table.items():
        context = _context(key, f"$.summary_table.{key}", source)
        for level, rate in decode(value, dict[str, Any], source.path, at=f"$.summary_table.{key}").items():
            where = f"$.summary_table.{key}.{level}"
            decode(rate, Figure | None, source.path, at=where)
            concurrency = _context(level, where, source)
            if concurrency < 1:
                raise InputError(source.path, where, "expected a concurrency of at least 1")
            cells.add((context, concurrency))
    return cells


def _absent_cell(context: int, concurrency: int, fits: bool) -> schema.DecodeCell:
    """A planned cell the file has no result for: the tool leaves out exactly the cells it skipped."""
    if not fits:
        return schema.DecodeCell(context_tokens=context, concurrency=concurrency, status="Over capacity")
    reason = "not measured: missing from the file's results although it fits the KV budget (skipped by hand or run interrupted)"
    return schema.DecodeCell(context_tokens=context, concurrency=concurrency, status="Failed", error=reason)


def _measured_cell(index: int, result: Result, meta: Metadata, source: Source) -> schema.DecodeCell:
    """A cell from one `results` entry, its status decided before any figure is read."""
    base = {"context_tokens": result.context_tokens, "concurrency": result.concurrency}
    if result.loop_detected:
        return schema.DecodeCell(**base, status="Looped", completed=0, output_tokens=0)
    if result.error:
        return schema.DecodeCell(**base, status="Failed", error=result.error)
    if result.aggregate_tps is None or result.aggregate_tps < 0:
        if result.capacity_limited:
            return schema.DecodeCell(**base, status="Over capacity")
        return schema.DecodeCell(**base, status="Failed", error="not measured: the cell was skipped during the run")
    where = f"$.results[{index}]"
    raw = source.data["results"][index]
    figures = decode(raw, Measured, source.path, at=where)
    if figures.num_errors > 0 and figures.total_tokens == 0:
        return schema.DecodeCell(**base, status="Failed", error=figures.timeout_reason or f"{figures.num_errors} request errors and no output tokens")
    metrics = meta.metrics_available is not False
    if metrics and figures.avg_running_reqs is None:
        raise InputError(source.path, f"{where}.avg_running_reqs", "missing: the server's metrics were available")
    queued = figures.capacity_limited or figures.max_queue_reqs > 0
    tails = {field: decode(raw.get(key), Figure | None, source.path, at=f"{where}.{key}") for key, field in TAILS}
    return schema.DecodeCell(
        **base, status="Requests queued" if queued else "Valid",
        total_tok_s=figures.aggregate_tps, per_request_tok_s=figures.output_tps_per_user_p50,
        ttft_ms=figures.ttft_p50 * 1000, tbt_ms=figures.inter_token_latency_p50 * 1000,
        avg_active=figures.avg_running_reqs if metrics else None,
        completed=figures.completed_request_count, output_tokens=figures.total_tokens,
        measured_s=figures.measurement_seconds,
        prompt_tokens=round(figures.input_seq_len_avg) if figures.input_seq_len_avg else None,
        **{field: seconds * 1000 for field, seconds in tails.items() if seconds is not None},
    )


IMPORTER = Importer(name=TOOL, recognises=recognises, read=read)
