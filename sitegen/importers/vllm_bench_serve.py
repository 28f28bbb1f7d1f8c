"""Read `vllm bench serve --save-result` JSON (one level a file), also inside `vllm bench sweep` folders.

total tok/s = output_throughput; per request tok/s = 1000 / median_tpot_ms; TTFT and time
between tokens = median_ttft_ms and median_itl_ms, with their p90 and p99 where
--metric-percentiles asked for them; context = total_input_tokens / completed.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import msgspec

from sitegen.errors import InputError
from sitegen.importers.importer import Importer, Source, decode
from sitegen.importers.sweep import Level, SweepFile, tok_s_from_ms

TOOL = "vllm bench serve"
# `vllm bench sweep serve` writes run=N.json per repeat beside warmup.json and summary.json.
FOLDER_FILES = "run=*.json"


class Result(msgspec.Struct, kw_only=True):
    """The fields of one saved result that a cell needs."""

    date: str
    model_id: str
    num_prompts: int
    max_concurrency: int | None
    duration: float
    completed: int
    failed: int | None = None  # not written by older versions: then num_prompts - completed
    total_input_tokens: int
    total_output_tokens: int
    output_throughput: float
    median_ttft_ms: float
    median_tpot_ms: float
    median_itl_ms: float
    p90_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    p90_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    input_lens: list[int] = []  # with --save-detailed only
    errors: list[str | None] = []  # with --save-detailed only
    run_number: int | None = None  # written by `vllm bench sweep`


def recognises(source: Source) -> bool:
    """A saved result names its model in model_id and its request count in num_prompts."""
    data = source.data
    return isinstance(data, dict) and "model_id" in data and "num_prompts" in data


def read(source: Source) -> SweepFile:
    """The one level of a saved result."""
    data, path = source.data, source.path
    result = decode(data, Result, path)
    if result.max_concurrency is None:
        raise InputError(path, "$.max_concurrency", "null: the run set no concurrency (a matrix cell needs --max-concurrency)")
    failed = result.failed if result.failed is not None else result.num_prompts - result.completed
    level = Level(
        where="$", input_tokens=_input_tokens(result), concurrency=result.max_concurrency,
        total_tok_s=result.output_throughput, per_request_tok_s=tok_s_from_ms(result.median_tpot_ms),
        ttft_ms=result.median_ttft_ms, ttft_p90_ms=result.p90_ttft_ms, ttft_p99_ms=result.p99_ttft_ms,
        tbt_ms=result.median_itl_ms, tbt_p90_ms=result.p90_itl_ms, tbt_p99_ms=result.p99_itl_ms,
        completed=result.completed, failed=failed, output_tokens=result.total_output_tokens, measured_s=result.duration,
        error=next((e for e in result.errors if e), None),
        repeat_group=str(path.parent) if result.run_number is not None else None,
    )
    return SweepFile(path=path, tool=TOOL, tool_version=None, model=result.model_id, model_field="$.model_id",
                     measured_at=_date(result.date, path), decode_test="Fixed request count", levels=[level])


def _input_tokens(result: Result) -> float | None:
    """The mean input length of the completed requests (of all, from --save-detailed, when none completed)."""
    if result.completed:
        return result.total_input_tokens / result.completed
    return sum(result.input_lens) / len(result.input_lens) if result.input_lens else None


def _date(date: str, path: Path) -> dt.datetime:
    """`date` ("20250101-120000", the local time of the benchmark machine), taken as UTC."""
    try:
        return dt.datetime.strptime(date, "%Y%m%d-%H%M%S").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise InputError(path, "$.date", f"expected a date as YYYYMMDD-HHMMSS, got {date!r}") from None


IMPORTER = Importer(name=TOOL, recognises=recognises, read=read, folder_files=FOLDER_FILES)
