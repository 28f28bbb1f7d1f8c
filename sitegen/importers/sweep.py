"""What the importers of benchmark sweeps share: each level becomes a decode cell, a sweep's files one bundle.

vllm bench serve, GuideLLM and AIPerf each report levels of (input length, concurrency).
Their modules only read a file into a SweepFile (decoded with msgspec Structs, so a field
that is missing or mistyped is named in the error); the mapping to cells lives here once.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from pathlib import Path

import msgspec

from runner.bundle.display import PREFILL_NOT_MEASURED
from runner.bundle.schema import Bundle, DecodeCell, Engine, RunInfo, Tokens
from sitegen.errors import InputError
from sitegen.importers.importer import Figure, Found, finish, slug_id
from sitegen.importers.options import ImportOptions
from sitegen.importers.source_requests import ToolRecords

# What a file leaves out: the engine behind the endpoint is not recorded by these tools.
UNKNOWN_ENGINE = "unknown"
ROW_SPREAD = 0.01  # levels whose mean input lengths differ by less than this share a matrix row
REASON_MAX = 1000  # characters of a failed request's reason a cell keeps: a file's reason may be any length


class Tails(msgspec.Struct, kw_only=True, frozen=True):
    """The tail percentiles of a latency that a cell keeps, as GuideLLM and AIPerf name them."""

    p90: Figure
    p99: Figure


class Level(msgspec.Struct, kw_only=True, frozen=True):
    """One (input length, concurrency) level as a tool reports it, in the bundle's units (tok/s, ms, s)."""

    where: str  # the level's place in its file, for error lines: "$" or "$.benchmarks[2]"
    input_tokens: float | None  # mean input length; None when no request completed to tell it
    concurrency: int
    total_tok_s: float
    per_request_tok_s: float | None
    ttft_ms: float | None
    tbt_ms: float | None
    completed: int
    failed: int
    output_tokens: int | None
    measured_s: float
    ttft_p90_ms: float | None = None
    ttft_p99_ms: float | None = None
    tbt_p90_ms: float | None = None
    tbt_p99_ms: float | None = None
    error: str | None = None  # a failed request's reason, as the tool recorded it
    incomplete: int = 0  # requests still running when the level ended (GuideLLM counts them)
    # Levels of one repeat group (a `vllm bench sweep` combination folder) are repeats of each other.
    repeat_group: str | None = None
    requests: ToolRecords | None = None  # each request's own record, where the tool wrote one


class SweepFile(msgspec.Struct, kw_only=True, frozen=True):
    """One result file of a sweep: which tool measured which model, and its levels."""

    path: Path
    tool: str
    tool_version: str | None
    model: str
    model_field: str  # where the file names its model, for the error when files disagree
    measured_at: dt.datetime | None
    decode_test: str
    levels: list[Level]
    left_out: list[str] = []  # what the file holds that is not a level, said in the bundle's notes


class Placed(msgspec.Struct, kw_only=True, frozen=True):
    """A level in the matrix: its cell (its row's context, its concurrency) and its own mean input length, rounded."""

    cell: tuple[int, int]
    context: int
    file: SweepFile
    level: Level


def tok_s_from_ms(ms_per_token: float | None, path: Path, where: str) -> float | None:
    """Per request tok/s from a time per output token in ms (the file's `where`); None when there is none."""
    if not ms_per_token:
        return None
    tok_s = 1000.0 / ms_per_token
    if not math.isfinite(tok_s):
        raise InputError(path, where, f"{ms_per_token:g} ms per output token is too short to be a time")
    return tok_s


def measured_at(moments: list[dt.datetime | None]) -> dt.datetime | None:
    """When the sweep started: its earliest file."""
    known = [m for m in moments if m is not None]
    return min(known) if known else None


def sweep_bundle(files: list[SweepFile], options: ImportOptions) -> Bundle:
    """One bundle from every file of one sweep: one tool, one model, one cell per level."""
    first = files[0]
    for other in files[1:]:
        if other.tool != first.tool:
            raise InputError(other.path, None, f"{other.tool} results, but {first.path} holds {first.tool} results: "
                                                "one run is measured with one tool")
        if other.model != first.model:
            raise InputError(other.path, other.model_field, f"model {other.model!r}, but {first.path} measured {first.model!r}: "
                                                             "one run is one model (import each under its own --id)")
    cells, repeats, moved = _cells(files)
    if not cells:
        raise InputError(first.path, None, "no level at a fixed concurrency: nothing to import as a matrix cell")
    started = measured_at([f.measured_at for f in files])
    # These tools send cold prompts: PREFILL_NOT_MEASURED gives their pages the TTFT line that says so.
    notes = [f"Figures as {first.tool} measured them.",
             *(note for f in files for note in f.left_out)]
    if moved:
        notes.append(f"A row's context is the median of its levels' mean input lengths, which differ by under "
                     f"{ROW_SPREAD:.0%}; each cell's own mean is its prompt tokens.")
    if repeats:
        notes.append(f"{first.tool} ran some levels {repeats} times; each cell shows the run with the median total tok/s.")
    version = next((f.tool_version for f in files if f.tool_version), None)
    found = Bundle(
        id="import", model=first.model, measured_at=started, origin=f"{first.tool} import",
        engine=Engine(name=UNKNOWN_ENGINE),
        run=RunInfo(served_model=first.model, benchmark_tool=f"{first.tool} {version}" if version else first.tool,
                    decode_test=first.decode_test, prefill_mode=PREFILL_NOT_MEASURED),
        notes=" ".join(notes),
        decode=cells,
    )
    date = started.date().isoformat() if started else None
    return finish(Found(found, name=lambda bundle: slug_id(bundle.model, bundle.hardware.gpu, first.tool, date)), options, first.path)


def _cells(files: list[SweepFile]) -> tuple[list[DecodeCell], int, bool]:
    """A cell per (context, concurrency), sorted; repeats of a level keep their median run.

    Also the repeat count, and whether some level's context was moved to its row's.
    """
    levels = placed(files)
    by_key: dict[tuple[int, int], list[tuple[SweepFile, Level]]] = {}
    for found in levels:
        by_key.setdefault(found.cell, []).append((found.file, found.level))
    cells: list[DecodeCell] = []
    repeats = 0
    for key in sorted(by_key):
        runs = by_key[key]
        groups = {level.repeat_group for _, level in runs}
        if len(runs) > 1 and (len(groups) > 1 or None in groups):
            (first_file, first), (file, level) = runs[0], runs[1]
            raise InputError(file.path, level.where, f"a second result for context {key[0]} × {key[1]} "
                                                     f"(the first: {first_file.path}:{first.where})")
        repeats = max(repeats, len(runs) if len(runs) > 1 else 0)
        cells.append(cell(_median_run([level for _, level in runs]), key[0]))
    return cells, repeats, any(found.cell[0] != found.context for found in levels)


def placed(files: list[SweepFile]) -> list[Placed]:
    """Each level of the files in the matrix, in the files' order."""
    keyed = [(_key(file, level), file, level) for file in files for level in file.levels]
    rows = matrix_rows([context for (context, _), _, _ in keyed])
    return [Placed(cell=(rows[context], concurrency), context=context, file=file, level=level)
            for (context, concurrency), file, level in keyed]


def matrix_rows(contexts: list[int]) -> dict[int, int]:
    """Each level's context mapped to its matrix row: contexts within ROW_SPREAD of the row's smallest share it.

    A tool's mean input length wanders by a token or two between levels of one nominal length
    (512.0, 512.6, 512.3); the row is the median of its levels' contexts.
    """
    rows: dict[int, int] = {}
    group: list[int] = []
    for context in sorted(contexts) + [0]:
        if group and (context == 0 or context > group[0] * (1 + ROW_SPREAD)):
            row = round(statistics.median(group))
            rows.update(dict.fromkeys(group, row))
            group = []
        group.append(context)
    return rows


def _key(file: SweepFile, level: Level) -> tuple[int, int]:
    """The level's cell: its mean input length, rounded, and its concurrency."""
    if level.input_tokens is None:
        raise InputError(file.path, level.where, "no request completed, so the file does not tell the input length of this level")
    context = round(level.input_tokens) if math.isfinite(level.input_tokens) else 0
    try:
        msgspec.convert(context, Tokens)
    except msgspec.ValidationError:
        raise InputError(file.path, level.where, f"a mean input length of {level.input_tokens:g} tokens is not a context") from None
    return context, level.concurrency


def _median_run(levels: list[Level]) -> Level:
    """Of repeated runs of one level, the one with the median total tok/s (the lower middle one of an even count)."""
    ranked = sorted(levels, key=lambda level: level.total_tok_s)
    return ranked[(len(ranked) - 1) // 2]


def _first_line(text: str) -> str:
    """The first line of a failed request's reason, cut to REASON_MAX characters."""
    line = text.strip().splitlines()[0]
    return line if len(line) <= REASON_MAX else line[:REASON_MAX] + "…"


def cell(level: Level, context: int) -> DecodeCell:
    """The decode cell of one level: Failed when no request completed, else its figures and any failures in a note."""
    base = {"context_tokens": context, "concurrency": level.concurrency, "completed": level.completed, "measured_s": level.measured_s}
    reason = f": {_first_line(level.error)}" if level.error and level.error.strip() else ""
    if level.completed == 0:
        running = f"{level.incomplete} still running at its end" if level.incomplete else ""
        if level.failed:
            error = f"all {level.failed} requests failed{reason}" + (f", {running}" if running else "")
        else:
            error = f"no request completed in the {level.measured_s:.1f} s the level ran" + (f" ({running})" if running else "")
        return DecodeCell(**base, status="Failed", output_tokens=0, error=error)
    note = None
    if level.failed:
        note = (f"{level.failed} of {level.failed + level.completed} requests failed{reason}; "
                f"the figures are those of the {level.completed} that completed")
    tails = {name: value for name, value in (
        ("ttft_p90_ms", level.ttft_p90_ms), ("ttft_p99_ms", level.ttft_p99_ms),
        ("tbt_p90_ms", level.tbt_p90_ms), ("tbt_p99_ms", level.tbt_p99_ms)) if value is not None}
    return DecodeCell(
        **base, status="Valid", total_tok_s=level.total_tok_s, per_request_tok_s=level.per_request_tok_s,
        ttft_ms=level.ttft_ms, tbt_ms=level.tbt_ms, output_tokens=level.output_tokens,
        prompt_tokens=round(level.input_tokens) if level.input_tokens else None, error=note, **tails,
    )
