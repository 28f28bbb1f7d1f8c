"""Read `vllm bench serve --save-result` JSON (one level a file), also inside `vllm bench sweep` folders.

total tok/s = output_throughput; per request tok/s = 1000 / median_tpot_ms; TTFT and time
between tokens = median_ttft_ms and median_itl_ms, with their p90 and p99 where
--metric-percentiles asked for them; context = total_input_tokens / completed.
With --save-detailed the file also holds one array entry per request (ttfts, itls, …): each
request's entries, under the arrays' names, are kept as its record (source_requests.py).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import msgspec

from sitegen.errors import InputError
from sitegen.importers.importer import AtLeastOne, Figure, Importer, Name, Source, Whole, checked_date, decode
from sitegen.importers.source_requests import ToolRecords, encoded_records
from sitegen.importers.sweep import Level, SweepFile, tok_s_from_ms

TOOL = "vllm bench serve"
# `vllm bench sweep serve` writes run=N.json per repeat beside warmup.json and summary.json.
FOLDER_FILES = "run=*.json"
# The per-request arrays, in the order vLLM writes them; all but latencies and queue_times only with --save-detailed.
PER_REQUEST = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times",
               "generated_texts", "errors")
SAVE_DETAILED = tuple(name for name in PER_REQUEST if name not in ("latencies", "queue_times"))


class Result(msgspec.Struct, kw_only=True):
    """The fields of one saved result that a cell needs."""

    date: str
    model_id: Name
    num_prompts: Whole
    max_concurrency: AtLeastOne | None
    duration: Figure
    completed: Whole
    failed: Whole | None = None  # not written by older versions: then num_prompts - completed
    total_input_tokens: Whole
    total_output_tokens: Whole
    output_throughput: Figure
    median_ttft_ms: Figure
    median_tpot_ms: Figure
    median_itl_ms: Figure
    p90_ttft_ms: Figure | None = None
    p99_ttft_ms: Figure | None = None
    p90_itl_ms: Figure | None = None
    p99_itl_ms: Figure | None = None
    input_lens: list[Whole] = []  # with --save-detailed only
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
    failed = _failed(result, path)
    level = Level(
        where="$", input_tokens=_input_tokens(result), concurrency=result.max_concurrency,
        total_tok_s=result.output_throughput, per_request_tok_s=tok_s_from_ms(result.median_tpot_ms, path, "$.median_tpot_ms"),
        ttft_ms=result.median_ttft_ms, ttft_p90_ms=result.p90_ttft_ms, ttft_p99_ms=result.p99_ttft_ms,
        tbt_ms=result.median_itl_ms, tbt_p90_ms=result.p90_itl_ms, tbt_p99_ms=result.p99_itl_ms,
        completed=result.completed, failed=failed, output_tokens=result.total_output_tokens, measured_s=result.duration,
        error=next((e for e in result.errors if e), None),
        repeat_group=str(path.parent) if result.run_number is not None else None,
        requests=_records(data, result.num_prompts, path),
    )
    return SweepFile(path=path, tool=TOOL, tool_version=None, model=result.model_id, model_field="$.model_id",
                     measured_at=_date(result.date, path), decode_test="Fixed request count", levels=[level])


def _failed(result: Result, path: Path) -> int:
    """The failed requests: num_prompts holds the completed and the failed ones, so neither count may exceed it."""
    if result.completed > result.num_prompts:
        raise InputError(path, "$.completed", f"{result.completed:,} completed requests, more than num_prompts ({result.num_prompts:,})")
    left = result.num_prompts - result.completed
    if result.failed is not None and result.failed > left:
        raise InputError(path, "$.failed", f"{result.failed:,} failed requests, more than num_prompts ({result.num_prompts:,}) "
                                           f"less the {result.completed:,} completed")
    return left if result.failed is None else result.failed


def _records(data: dict, requests: int, path: Path) -> ToolRecords | None:
    """Each request's entries of the per-request arrays, when the result was saved with --save-detailed.

    Every array holds one entry a request (num_prompts of them); one that does not is refused,
    since its entries could not be told apart.
    """
    if not any(name in data for name in SAVE_DETAILED):
        return None
    arrays = {name: data[name] for name in PER_REQUEST if name in data}
    for name, entries in arrays.items():
        if not isinstance(entries, list) or len(entries) != requests:
            found = f"{len(entries):,} entries" if isinstance(entries, list) else "not an array"
            raise InputError(path, f"$.{name}", f"{found}, but the run sent {requests:,} requests (num_prompts): "
                                                "--save-detailed writes one entry a request")
    return encoded_records([{name: entries[index] for name, entries in arrays.items()} for index in range(requests)],
                           path, "$", "save the result without --save-detailed to import it")


def _input_tokens(result: Result) -> float | None:
    """The mean input length of the completed requests (of all, from --save-detailed, when none completed)."""
    if result.completed:
        return result.total_input_tokens / result.completed
    return sum(result.input_lens) / len(result.input_lens) if result.input_lens else None


def _date(date: str, path: Path) -> dt.datetime:
    """`date` ("20250101-120000", the local time of the benchmark machine), taken as UTC."""
    try:
        moment = dt.datetime.strptime(date, "%Y%m%d-%H%M%S").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise InputError(path, "$.date", f"expected a date as YYYYMMDD-HHMMSS, got {date!r}") from None
    return checked_date(moment, path, "$.date")


IMPORTER = Importer(name=TOOL, recognises=recognises, read=read, folder_files=FOLDER_FILES)
