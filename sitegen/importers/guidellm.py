"""Read GuideLLM's benchmarks JSON (`guidellm run --output kind=json`): one level per benchmark.

total tok/s = metrics.output_tokens_per_second.total.mean; per request tok/s = 1000 / the
median time per output token; TTFT and time between tokens (inter-token latency) = the
medians of successful requests, with their p90 and p99; context = the mean prompt token count.
The requests the report keeps of each benchmark (the sample its sample size allows) are kept
with its level (source_requests.py).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any

import msgspec

from sitegen.errors import InputError
from sitegen.importers.importer import AtLeastOne, Figure, Importer, Name, Source, Whole, checked_date, decode
from sitegen.importers.source_requests import ToolRecords, checked_size, encoded_records
from sitegen.importers.sweep import Level, SweepFile, Tails, measured_at, tok_s_from_ms

TOOL = "GuideLLM"
FOLDER_FILES = None  # GuideLLM writes one file wherever --output says
EPOCH_9999 = 253402300800.0  # the first second of the year 10000, past any datetime
STATUSES = ("successful", "errored", "incomplete")  # the report's lists of requests, in the order they are kept
TOO_MANY = "write the report with a smaller sample of requests (GuideLLM's sample size) to import it"


class Stats(msgspec.Struct, kw_only=True):
    """A distribution over requests (or tokens) of one status."""

    mean: Figure
    median: Figure
    count: Whole
    total_sum: Figure
    percentiles: Tails


class ByStatus(msgspec.Struct, kw_only=True):
    """A metric split by request status; "total" counts every request of the benchmark."""

    successful: Stats
    total: Stats


class Totals(msgspec.Struct, kw_only=True):
    """Requests by how they ended: incomplete ones were cut at the end of the benchmark."""

    successful: Whole
    errored: Whole
    incomplete: Whole


class Metrics(msgspec.Struct, kw_only=True):
    """The metrics a cell needs, of the many GuideLLM computes."""

    request_totals: Totals
    prompt_token_count: ByStatus
    output_token_count: ByStatus
    output_tokens_per_second: ByStatus
    time_to_first_token_ms: ByStatus
    time_per_output_token_ms: ByStatus
    inter_token_latency_ms: ByStatus


class Strategy(msgspec.Struct, kw_only=True):
    """How the benchmark loaded the server: synchronous, concurrent (streams) or by request rate."""

    type_: str
    streams: AtLeastOne | None = None


class Backend(msgspec.Struct, kw_only=True):
    """The endpoint benchmarked: only its model name is kept."""

    model: Name


class Config(msgspec.Struct, kw_only=True):
    """The benchmark's settings, as GuideLLM recorded them."""

    strategy: Strategy
    backend: Backend
    constraints: dict[str, object] = {}


class RequestInfo(msgspec.Struct, kw_only=True):
    """How a request ended; an errored one says why."""

    error: str | None = None


class RequestStats(msgspec.Struct, kw_only=True):
    """A request GuideLLM kept a sample of; errored ones carry their error."""

    info: RequestInfo


class Requests(msgspec.Struct, kw_only=True):
    """The requests the report kept of a benchmark, by status: each an object (kept as written), errored ones read for their error."""

    successful: list[dict[str, Any]] = []
    errored: list[RequestStats] = []
    incomplete: list[dict[str, Any]] = []


class Benchmark(msgspec.Struct, kw_only=True):
    """One level: a strategy run for its duration."""

    config: Config
    metrics: Metrics
    start_time: Annotated[float, msgspec.Meta(ge=0, lt=EPOCH_9999)]  # seconds since the epoch
    duration: Figure
    requests: Requests = msgspec.field(default_factory=Requests)


class Metadata(msgspec.Struct, kw_only=True):
    """Who wrote the file."""

    guidellm_version: str


class Report(msgspec.Struct, kw_only=True):
    """The whole file: the tool's version and its benchmarks."""

    metadata: Metadata
    benchmarks: list[Benchmark]


def recognises(source: Source) -> bool:
    """GuideLLM's report: a list of benchmarks, each a "generative_benchmark" (older versions too)."""
    data = source.data
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        return False
    return any(isinstance(b, dict) and b.get("type_") == "generative_benchmark" for b in data["benchmarks"])


def read(source: Source) -> SweepFile:
    """Every benchmark at a fixed concurrency is a level; rate-driven ones are left out with a note."""
    data, path = source.data, source.path
    report = decode(data, Report, path)
    levels: list[Level] = []
    rated: list[str] = []
    for i, benchmark in enumerate(report.benchmarks):
        concurrency = _concurrency(benchmark.config.strategy)
        if concurrency is None:
            rated.append(benchmark.config.strategy.type_)
            continue
        levels.append(_level(benchmark, data["benchmarks"][i], path, f"$.benchmarks[{i}]", concurrency))
    checked_size(sum(len(r) for level in levels if level.requests for r in level.requests.records), path, "$.benchmarks", TOO_MANY)
    plural = "s are" if len(rated) > 1 else " is"
    left_out = [f"{path.name}: {len(rated)} benchmark{plural} driven by request rate ({', '.join(sorted(set(rated)))}), "
                "not imported: a matrix cell holds a fixed number of requests at once."] if rated else []
    models = {b.config.backend.model for b in report.benchmarks}
    model = report.benchmarks[0].config.backend.model if report.benchmarks else ""
    if len(models) > 1:
        first, second, *rest = sorted(models)
        more = f" and {len(rest):,} more" if rest else ""
        raise InputError(path, "$.benchmarks[].config.backend.model", f"several models in one file: {first!r}, {second!r}{more}")
    first = report.benchmarks[0].config.constraints if report.benchmarks else {}
    return SweepFile(
        path=path, tool=TOOL, tool_version=report.metadata.guidellm_version, model=model,
        model_field="$.benchmarks[0].config.backend.model",
        measured_at=measured_at([_started(b, path, f"$.benchmarks[{i}].start_time") for i, b in enumerate(report.benchmarks)]),
        decode_test="Fixed duration" if "max_duration" in first else "Fixed request count",
        levels=levels, left_out=left_out,
    )


def _started(benchmark: Benchmark, path: Path, where: str) -> dt.datetime:
    """When a benchmark started (`where`: its start_time, seconds since the epoch)."""
    return checked_date(dt.datetime.fromtimestamp(benchmark.start_time, dt.timezone.utc), path, where)


def _concurrency(strategy: Strategy) -> int | None:
    """Requests at once: 1 when synchronous, the streams of a concurrent benchmark, else none."""
    if strategy.type_ == "synchronous":
        return 1
    return strategy.streams if strategy.type_ == "concurrent" else None


def _level(benchmark: Benchmark, written: dict, path: Path, where: str, concurrency: int) -> Level:
    """One benchmark's figures (`where` in the file at path, `written` as parsed): latencies of successful
    requests, throughput over all of them, and the requests the report kept."""
    m = benchmark.metrics
    prompt = m.prompt_token_count.successful if m.prompt_token_count.successful.count else m.prompt_token_count.total
    ttft, tpot, itl = m.time_to_first_token_ms.successful, m.time_per_output_token_ms.successful, m.inter_token_latency_ms.successful
    completed = m.request_totals.successful
    return Level(
        where=where, input_tokens=prompt.mean if prompt.count else None, concurrency=concurrency,
        total_tok_s=m.output_tokens_per_second.total.mean,
        per_request_tok_s=tok_s_from_ms(tpot.median, path, f"{where}.metrics.time_per_output_token_ms.successful.median") if completed else None,
        ttft_ms=ttft.median, ttft_p90_ms=ttft.percentiles.p90, ttft_p99_ms=ttft.percentiles.p99,
        tbt_ms=itl.median, tbt_p90_ms=itl.percentiles.p90, tbt_p99_ms=itl.percentiles.p99,
        completed=completed, failed=m.request_totals.errored, incomplete=m.request_totals.incomplete, output_tokens=round(m.output_token_count.total.total_sum),
        measured_s=benchmark.duration,
        error=next((r.info.error for r in benchmark.requests.errored if r.info.error), None),
        requests=_records(written.get("requests") or {}, path, f"{where}.requests"),
    )


def _records(requests: dict, path: Path, where: str) -> ToolRecords | None:
    """Each request the report kept (`requests`, at `where`), successful, errored then incomplete ones; None when it kept none."""
    kept = [record for status in STATUSES for record in requests.get(status) or []]
    return encoded_records(kept, path, where, TOO_MANY) if kept else None


IMPORTER = Importer(name=TOOL, recognises=recognises, read=read, folder_files=FOLDER_FILES)
