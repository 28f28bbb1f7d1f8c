"""Import llm-inference-bench's `benchmark_results.json` as a bundle, detected by content.

Mapping choices follow DESIGN.md's definitions (medians, tokens counted from usage):
the report's "LLM inference bench import" section lists them field by field.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path
from typing import NoReturn

import msgspec

from runner.bundle.schema import (
    Bundle,
    DecodeCell,
    Engine,
    Hardware,
    PrefillPoint,
    RunInfo,
)
from sitegen.errors import InputError
from sitegen.importers import bundle_id_from, validated
from sitegen.importers.options import ImportOptions, apply_options

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

Cell = tuple[int, int]


def looks_like(data: object) -> bool:
    """True for llm-inference-bench output: metadata with version and engine, plus its result keys."""
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        return False
    metadata = data["metadata"]
    has_results = any(key in data for key in ("prefill", "results", "summary_table"))
    return "version" in metadata and "engine" in metadata and has_results


def convert(data: dict, path: Path, options: ImportOptions) -> Bundle:
    """The bundle for one llm-inference-bench file; options fill what the file lacks."""
    doc = _Doc(path)
    meta = doc.get(data, "metadata", "metadata", dict)
    measured_at = _measured_at(doc, meta)
    prefill, prefill_dropped = _prefill(doc, doc.get(data, "prefill", "prefill", dict))
    decode, decode_dropped = _decode(doc, data, meta)
    found = Bundle(
        id="file",
        model=doc.get(meta, "model", "metadata.model", str),
        measured_at=measured_at,
        origin=f"{TOOL} import",
        hardware=Hardware(os=_os_name(doc, data)),
        engine=_engine(doc, data, meta),
        run=_run_info(doc, meta),
        notes=CONTEXT_ZERO_NOTE if prefill_dropped or decode_dropped else None,
        prefill=prefill,
        decode=decode,
    )
    bundle = apply_options(found, options)
    date = measured_at.date().isoformat() if measured_at else None
    return validated(msgspec.structs.replace(bundle, id=bundle_id_from(options, bundle.model, bundle.hardware.gpu, bundle.engine.name, date)), path)


class _Doc:
    """Typed reads from the JSON: a missing or mistyped field raises one InputError naming its path."""

    KINDS: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "an integer", float: "a number"}

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> NoReturn:
        """Stop the import with one line naming the file and the field."""
        raise InputError(self.path, where, message)

    def get(self, obj: dict, key: str, where: str, kind: type, *, optional: bool = False, nullable: bool = False) -> object:
        """obj[key] checked against kind (float means any finite number); None only when allowed."""
        if key not in obj:
            if optional:
                return None
            self.fail(where, "missing")
        value = obj[key]
        if value is None and nullable:
            return None
        if not self._is(value, kind):
            self.fail(where, f"expected {self.KINDS[kind]}")
        return float(value) if kind is float else value

    @staticmethod
    def _is(value: object, kind: type) -> bool:
        """Whether value is of kind; JSON booleans are never numbers, NaN and infinity never finite."""
        if kind in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return False
            return isinstance(value, int) or (kind is float and math.isfinite(value))
        return isinstance(value, kind)

    def number(self, obj: dict, key: str, where: str, *, nullable: bool = False) -> float | None:
        """A finite number that is not negative (all of the tool's figures are)."""
        value = self.get(obj, key, where, float, nullable=nullable)
        if value is not None and value < 0:
            self.fail(where, f"expected a number >= 0, got {value:g}")
        return value

    def context(self, key: str, where: str) -> int:
        """A token count written as an object key ("4096")."""
        if not key.isdigit():
            self.fail(where, f"expected a token count as key, got {key!r}")
        return int(key)


def _measured_at(doc: _Doc, meta: dict) -> dt.datetime | None:
    """metadata.timestamp in UTC; the tool writes local time without a zone, taken here as UTC."""
    stamp = doc.get(meta, "timestamp", "metadata.timestamp", str, optional=True, nullable=True)
    if not stamp:
        return None
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        doc.fail("metadata.timestamp", f"expected an ISO date and time, got {stamp!r}")
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def _engine(doc: _Doc, data: dict, meta: dict) -> Engine:
    """Engine name from metadata, version from the tool's startup event."""
    name = doc.get(meta, "engine", "metadata.engine", str)
    if not name:
        doc.fail("metadata.engine", "expected an engine name, got an empty string")
    return Engine(name=name, version=_engine_version(doc, data))


def _engine_version(doc: _Doc, data: dict) -> str | None:
    """The version from the "startup engine <name> <version> models=" event, if logged."""
    events = doc.get(data, "event_log", "event_log", list, optional=True) or []
    for i, event in enumerate(events):
        if not isinstance(event, str):
            doc.fail(f"event_log[{i}]", "expected a string")
        match = ENGINE_EVENT.search(event)
        if match and match.group(1) != "?":
            return match.group(1)
    return None


def _os_name(doc: _Doc, data: dict) -> str | None:
    """'linux' when the recorded uname says Linux; the tool records nothing else about the OS."""
    diagnostics = doc.get(data, "startup_diagnostics", "startup_diagnostics", dict, optional=True) or {}
    uname = doc.get(diagnostics, "uname", "startup_diagnostics.uname", str, optional=True) or ""
    return "linux" if uname.startswith("Linux") else None


def _run_info(doc: _Doc, meta: dict) -> RunInfo:
    """How the run was measured, in the words the pages use."""
    decode_mode = doc.get(meta, "decode_mode", "metadata.decode_mode", str)
    prefill_mode = doc.get(meta, "prefill_mode", "metadata.prefill_mode", str)
    return RunInfo(
        served_model=doc.get(meta, "model", "metadata.model", str),
        benchmark_tool=f"{TOOL} v{doc.get(meta, 'version', 'metadata.version', str)}",
        decode_test=_word(doc, DECODE_TESTS, decode_mode, "metadata.decode_mode"),
        prefill_mode=_word(doc, PREFILL_MODES, prefill_mode, "metadata.prefill_mode"),
        seconds_per_measurement=doc.number(meta, "duration_per_test", "metadata.duration_per_test") if decode_mode == "duration" else None,
        max_output_tokens=_positive(doc, meta, "max_tokens", "metadata.max_tokens"),
    )


def _word(doc: _Doc, words: dict[str, str], value: str, where: str) -> str:
    """The page word for one of the tool's mode names; an unknown name is an error."""
    if value not in words:
        doc.fail(where, f"unknown value {value!r} (expected one of: {', '.join(words)})")
    return words[value]


def _positive(doc: _Doc, obj: dict, key: str, where: str) -> int:
    """An integer of at least 1."""
    value = doc.get(obj, key, where, int)
    if value < 1:
        doc.fail(where, f"expected an integer >= 1, got {value}")
    return value


def _prefill(doc: _Doc, table: dict) -> tuple[list[PrefillPoint], bool]:
    """One point per context of `prefill`, sorted; also whether a context-0 entry was dropped."""
    points: list[PrefillPoint] = []
    dropped = False
    for key in table:
        where = f"prefill.{key}"
        context = doc.context(key, where)
        if context == 0:
            dropped = True
            continue
        points.append(_prefill_point(doc, doc.get(table, key, where, dict), context, where))
    return sorted(points, key=lambda p: p.context_tokens), dropped


def _prefill_point(doc: _Doc, entry: dict, context: int, where: str) -> PrefillPoint:
    """prompt tok/s = prompt_tokens / TTFT as the tool computed it; a zero rate means no measurement."""
    rate = doc.number(entry, "tok_per_sec", f"{where}.tok_per_sec")
    ttft = doc.number(entry, "ttft_seconds", f"{where}.ttft_seconds")
    prompt_tokens = doc.get(entry, "prompt_tokens", f"{where}.prompt_tokens", int)
    if rate == 0 or ttft == 0:
        return PrefillPoint(context_tokens=context, status="Failed", error="no prefill measurement recorded (0 tok/s)")
    return PrefillPoint(context_tokens=context, status="Valid", prompt_tok_s=rate, ttft_ms=ttft * 1000, prompt_tokens=prompt_tokens)


def _decode(doc: _Doc, data: dict, meta: dict) -> tuple[list[DecodeCell], bool]:
    """Every planned or measured cell, sorted by context then concurrency; also whether context-0 cells were dropped."""
    measured = _results_by_cell(doc, doc.get(data, "results", "results", list))
    planned = _planned_cells(doc, meta) | _summary_cells(doc, doc.get(data, "summary_table", "summary_table", dict))
    budget = doc.get(meta, "max_total_tokens", "metadata.max_total_tokens", int, optional=True) or 0
    max_tokens = _positive(doc, meta, "max_tokens", "metadata.max_tokens")
    metrics = doc.get(meta, "metrics_available", "metadata.metrics_available", bool, optional=True) is not False
    every = planned | measured.keys()
    cells: list[DecodeCell] = []
    for context, concurrency in sorted(every):
        if context == 0:
            continue
        if (context, concurrency) in measured:
            where, result = measured[(context, concurrency)]
            cells.append(_measured_cell(doc, result, where, (context, concurrency), metrics))
        else:
            fits = budget <= 0 or concurrency * (context + max_tokens) <= budget
            cells.append(_absent_cell(context, concurrency, fits))
    return cells, any(context == 0 for context, _ in every)


def _results_by_cell(doc: _Doc, results: list) -> dict[Cell, tuple[str, dict]]:
    """`results` keyed by (context, concurrency), each with its JSON path; a cell twice is an error."""
    cells: dict[Cell, tuple[str, dict]] = {}
    for i, result in enumerate(results):
        where = f"results[{i}]"
        if not isinstance(result, dict):
            doc.fail(where, "expected an object")
        context = doc.get(result, "context_tokens", f"{where}.context_tokens", int)
        concurrency = doc.get(result, "concurrency", f"{where}.concurrency", int)
        if context < 0 or concurrency < 1:
            doc.fail(where, f"impossible cell: context {context}, concurrency {concurrency}")
        if (context, concurrency) in cells:
            doc.fail(where, f"second result for context {context}, concurrency {concurrency} (first: {cells[(context, concurrency)][0]})")
        cells[(context, concurrency)] = (where, result)
    return cells


def _planned_cells(doc: _Doc, meta: dict) -> set[Cell]:
    """metadata.context_lengths × metadata.concurrency_levels: the matrix the run set out to measure."""
    contexts = _int_list(doc, meta, "context_lengths", minimum=0)
    levels = _int_list(doc, meta, "concurrency_levels", minimum=1)
    return {(context, concurrency) for context in contexts for concurrency in levels}


def _int_list(doc: _Doc, meta: dict, key: str, minimum: int) -> list[int]:
    """A list of integers of at least minimum under metadata.key."""
    values = doc.get(meta, key, f"metadata.{key}", list)
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            doc.fail(f"metadata.{key}[{i}]", f"expected an integer >= {minimum}")
    return values


def _summary_cells(doc: _Doc, table: dict) -> set[Cell]:
    """The cells `summary_table` names ({context: {concurrency: tok/s or null}})."""
    cells: set[Cell] = set()
    for key in table:
        context = doc.context(key, f"summary_table.{key}")
        row = doc.get(table, key, f"summary_table.{key}", dict)
        for level in row:
            where = f"summary_table.{key}.{level}"
            doc.number(row, level, where, nullable=True)
            concurrency = doc.context(level, where)
            if concurrency < 1:
                doc.fail(where, "expected a concurrency of at least 1")
            cells.add((context, concurrency))
    return cells


def _absent_cell(context: int, concurrency: int, fits: bool) -> DecodeCell:
    """A planned cell the file has no result for: the tool leaves out exactly the cells it skipped."""
    if not fits:
        return DecodeCell(context_tokens=context, concurrency=concurrency, status="Over capacity")
    reason = "not measured: missing from the file's results although it fits the KV budget (skipped by hand or run interrupted)"
    return DecodeCell(context_tokens=context, concurrency=concurrency, status="Failed", error=reason)


def _measured_cell(doc: _Doc, result: dict, where: str, cell: Cell, metrics: bool) -> DecodeCell:
    """A cell from one `results` entry, its status decided before any figure is read."""
    base = {"context_tokens": cell[0], "concurrency": cell[1]}
    if doc.get(result, "loop_detected", f"{where}.loop_detected", bool, optional=True):
        return DecodeCell(**base, status="Looped", completed=0, output_tokens=0)
    error = _failure(doc, result, where)
    if error == "capacity":
        return DecodeCell(**base, status="Over capacity")
    if error:
        return DecodeCell(**base, status="Failed", error=error)
    queued = doc.get(result, "capacity_limited", f"{where}.capacity_limited", bool) or doc.number(result, "max_queue_reqs", f"{where}.max_queue_reqs") > 0
    return DecodeCell(**base, status="Requests queued" if queued else "Valid", **_figures(doc, result, where, metrics))


def _failure(doc: _Doc, result: dict, where: str) -> str | None:
    """Why a result holds no measurement: "capacity" for a KV skip, an error text, or None when it is measured."""
    error = doc.get(result, "error", f"{where}.error", str, optional=True, nullable=True)
    if error:
        return error
    rate = doc.get(result, "aggregate_tps", f"{where}.aggregate_tps", float, nullable=True)
    if rate is None or rate < 0:
        capacity = doc.get(result, "capacity_limited", f"{where}.capacity_limited", bool, optional=True)
        return "capacity" if capacity else "not measured: the cell was skipped during the run"
    errors = doc.get(result, "num_errors", f"{where}.num_errors", int)
    if errors > 0 and doc.get(result, "total_tokens", f"{where}.total_tokens", int) == 0:
        reason = doc.get(result, "timeout_reason", f"{where}.timeout_reason", str, optional=True, nullable=True)
        return reason or f"{errors} request errors and no output tokens"
    return None


def _figures(doc: _Doc, result: dict, where: str, metrics: bool) -> dict[str, float | int | None]:
    """DESIGN.md's figures from one measured result; average active needs the server's scheduler metrics."""
    ttft = doc.number(result, "ttft_p50", f"{where}.ttft_p50")
    between = doc.number(result, "inter_token_latency_p50", f"{where}.inter_token_latency_p50")
    prompt = doc.number(result, "input_seq_len_avg", f"{where}.input_seq_len_avg", nullable=True)
    return {
        "total_tok_s": doc.number(result, "aggregate_tps", f"{where}.aggregate_tps"),
        "per_request_tok_s": doc.number(result, "output_tps_per_user_p50", f"{where}.output_tps_per_user_p50"),
        "ttft_ms": ttft * 1000,
        "tbt_ms": between * 1000,
        "avg_active": doc.number(result, "avg_running_reqs", f"{where}.avg_running_reqs") if metrics else None,
        "completed": _count(doc, result, "completed_request_count", where),
        "output_tokens": _count(doc, result, "total_tokens", where),
        "measured_s": doc.number(result, "measurement_seconds", f"{where}.measurement_seconds"),
        "prompt_tokens": round(prompt) if prompt else None,
        **_tails(doc, result, where),
    }


TAILS = (("ttft_p90", "ttft_p90_ms"), ("ttft_p99", "ttft_p99_ms"),
         ("inter_token_latency_p90", "tbt_p90_ms"), ("inter_token_latency_p99", "tbt_p99_ms"))


def _tails(doc: _Doc, result: dict, where: str) -> dict[str, float]:
    """The tool's p90 and p99 of TTFT and time between tokens, in ms, where the file has them."""
    found = {}
    for key, field in TAILS:
        value = doc.number(result, key, f"{where}.{key}", nullable=True) if key in result else None
        if value is not None:
            found[field] = value * 1000
    return found


def _count(doc: _Doc, result: dict, key: str, where: str) -> int:
    """A non-negative integer field of a result."""
    value = doc.get(result, key, f"{where}.{key}", int)
    if value < 0:
        doc.fail(f"{where}.{key}", f"expected an integer >= 0, got {value}")
    return value
