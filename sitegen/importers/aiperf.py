"""Read AIPerf's `profile_export_aiperf.json` (one run, one level a file), and the records beside it.

total tok/s = output_token_throughput.avg; per request tok/s = output_token_throughput_per_user.p50;
TTFT and time between tokens = time_to_first_token.p50 and inter_token_latency.p50, with
their p90 and p99; context = input_sequence_length.avg; concurrency = the profiling phase's.
Each request's record, which AIPerf writes to `profile_export.jsonl` in the same artifact
folder, is kept with the level (source_requests.py).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from sitegen.errors import InputError
from sitegen.importers.importer import AtLeastOne, Figure, Importer, Name, Source, Whole, decode, utc_moment
from sitegen.importers.source_requests import ToolRecords, read_json_lines
from sitegen.importers.sweep import Level, SweepFile, Tails

TOOL = "AIPerf"
FOLDER_FILES = "profile_export_aiperf.json"  # in each run's --output-artifact-dir


class Total(msgspec.Struct, kw_only=True):
    """A run-wide figure: AIPerf writes it as its average."""

    avg: Figure


class Distribution(Tails, kw_only=True):
    """A per-request figure: its average and median besides the tails a cell keeps."""

    avg: Figure
    p50: Figure


class Phase(msgspec.Struct, kw_only=True):
    """One phase of the run (warm-up, profiling) and how it loaded the server."""

    kind: str
    concurrency: AtLeastOne | None = None
    requests: Whole | None = None


class Model(msgspec.Struct, kw_only=True):
    """A model as the run named it."""

    name: Name


class Models(msgspec.Struct, kw_only=True):
    """The models benchmarked; a run of several is refused as not one model."""

    items: list[Model]


class InputConfig(msgspec.Struct, kw_only=True):
    """The command line as AIPerf recorded it."""

    models: Models
    phases: list[Phase]


class ErrorDetails(msgspec.Struct, kw_only=True):
    """An error as AIPerf recorded it: the server's message."""

    message: str | None = None


class ErrorCount(msgspec.Struct, kw_only=True):
    """One kind of error of the run (AIPerf counts beside it how many requests had it)."""

    error_details: ErrorDetails


class Export(msgspec.Struct, kw_only=True):
    """The fields of one export that a cell needs."""

    aiperf_version: str
    input_config: InputConfig
    start_time: str | None = None
    output_token_throughput: Total
    output_token_throughput_per_user: Distribution
    time_to_first_token: Distribution
    inter_token_latency: Distribution
    input_sequence_length: Distribution
    request_count: Total  # successful requests (completed_request_count adds the failed ones)
    error_request_count: Total | None = None  # written only when a request failed
    total_output_tokens: Total
    benchmark_duration: Total
    error_summary: list[ErrorCount] = []
    was_cancelled: bool = False


def recognises(source: Source) -> bool:
    """An AIPerf export carries the run's input_config beside its version (or, in early versions, its records)."""
    data = source.data
    return isinstance(data, dict) and "input_config" in data and any(k in data for k in ("aiperf_version", "schema_version", "records"))


def read(source: Source) -> SweepFile:
    """The one level of an export: its profiling phase at a fixed concurrency."""
    data, path = source.data, source.path
    export = decode(data, Export, path)
    concurrency, planned = _profiling(export.input_config, path)
    if not export.input_config.models.items:
        raise InputError(path, "$.input_config.models.items", "no model named")
    completed, failed = _requests(export, planned, path)
    level = Level(
        where="$", input_tokens=export.input_sequence_length.avg, concurrency=concurrency,
        total_tok_s=export.output_token_throughput.avg, per_request_tok_s=export.output_token_throughput_per_user.p50,
        ttft_ms=export.time_to_first_token.p50, ttft_p90_ms=export.time_to_first_token.p90, ttft_p99_ms=export.time_to_first_token.p99,
        tbt_ms=export.inter_token_latency.p50, tbt_p90_ms=export.inter_token_latency.p90, tbt_p99_ms=export.inter_token_latency.p99,
        completed=completed, failed=failed,
        output_tokens=round(export.total_output_tokens.avg), measured_s=export.benchmark_duration.avg,
        error=next((e.error_details.message for e in export.error_summary if e.error_details.message), None),
        requests=_records(path),
    )
    return SweepFile(
        path=path, tool=TOOL, tool_version=export.aiperf_version, model=export.input_config.models.items[0].name,
        model_field="$.input_config.models.items[0].name", measured_at=utc_moment(export.start_time, path, "$.start_time"),
        decode_test="Fixed request count" if planned is not None else "Fixed duration", levels=[level],
        left_out=[f"{path.name}: the run was cancelled before it finished."] if export.was_cancelled else [],
    )


def records_path(export: Path) -> Path:
    """Where AIPerf writes the requests' records of the export at `export`: `profile_export.jsonl` beside
    `profile_export_aiperf.json`, `NAME.jsonl` beside `NAME.json` under --profile-export-prefix NAME."""
    return export.with_name(export.name.removesuffix(".json").removesuffix("_aiperf") + ".jsonl")


def _records(export: Path) -> ToolRecords | None:
    """The requests' records beside the export, if AIPerf wrote them (--export-level records, its default)."""
    path = records_path(export)
    return read_json_lines(path) if path.is_file() else None


def _profiling(config: InputConfig, path: Path) -> tuple[int, int | None]:
    """The profiling phase's concurrency, and the fixed number of requests it ran (None: it ran for a duration)."""
    for phase in config.phases:
        if phase.kind == "profiling" and phase.concurrency is not None:
            return phase.concurrency, phase.requests
    raise InputError(path, "$.input_config.phases", "no profiling phase at a fixed concurrency (a matrix cell needs --concurrency)")


def _requests(export: Export, planned: int | None, path: Path) -> tuple[int, int]:
    """The completed and failed requests, whole numbers that together fit in the requests the phase planned."""
    completed = _whole(export.request_count, path, "$.request_count.avg")
    failed = _whole(export.error_request_count, path, "$.error_request_count.avg") if export.error_request_count else 0
    if planned is not None and completed + failed > planned:
        raise InputError(path, "$.request_count.avg", f"{completed} completed and {failed} failed requests, "
                                                      f"but the profiling phase ran {planned}")
    return completed, failed


def _whole(total: Total, path: Path, where: str) -> int:
    """A count AIPerf writes as an average: it must be a whole number."""
    if not total.avg.is_integer():
        raise InputError(path, where, f"expected a whole number of requests, got {total.avg:g}")
    return int(total.avg)


IMPORTER = Importer(name=TOOL, recognises=recognises, read=read, folder_files=FOLDER_FILES)
