"""Raw request records, and the one function that turns a window's records into its published figures.

The runner writes every request of every decode window it keeps beside the bundle, as
`<id>.requests.jsonl.gz`: gzip-compressed JSON lines (readable with `zcat`, `jq` or pandas, and
appended to as the run goes, one gzip member per window). Each window is one `WindowRecord` line
followed by one `RequestRecord` line per request it streamed. Times are whole microseconds from
the window's start, token arrivals as the gaps between them (small numbers that compress well);
the runner computes a cell's figures from the records with `window_figures`, so anyone
recomputing them from the file gets the bundle's figures exactly.
Where a cell was measured again (after a crash, or a resume), its last window in the file counts.
"""

from __future__ import annotations

import bisect
import gzip
import itertools
import math
import statistics
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

MICROSECONDS = 1_000_000


class WindowRecord(msgspec.Struct, tag="window", tag_field="kind", kw_only=True):
    """One decode window: its cell, which repeat, and how long it lasted (µs)."""

    context: int
    concurrency: int
    repeat: int = 0
    window_us: int


class RequestRecord(msgspec.Struct, tag="request", tag_field="kind", kw_only=True):
    """One request of a window, in microseconds from the window's start.

    `gaps_us` are the moments tokens arrived up to the window's end, each as the time since the
    one before (the first: since the window's start), and `counts` how many each brought (a chunk
    may carry several); `tokens` is their sum; `end_us` is when the request finished, if it did
    by the window's end; `status` is "finished", or "cut" when it was still streaming as the
    window ended. (A window in which any request failed fails its cell, and no figures, so no
    records, come of it.)
    """

    start_us: int
    gaps_us: list[int]
    counts: list[int]
    tokens: int
    end_us: int | None = None
    finish_reason: str | None = None
    status: Literal["finished", "cut"]

    def times(self) -> list[float]:
        """When each batch of tokens arrived, in seconds from the window's start."""
        return [moment / MICROSECONDS for moment in itertools.accumulate(self.gaps_us)]


Record = WindowRecord | RequestRecord
_decoder = msgspec.json.Decoder(Record)
_encoder = msgspec.json.Encoder()


class WindowFigures(msgspec.Struct, kw_only=True):
    """A decode window's figures, as the run page defines them (see `window_figures`)."""

    total_tok_s: float
    per_request_tok_s: float | None
    ttft_ms: float | None
    tbt_ms: float | None
    avg_active: float
    completed: int
    output_tokens: int
    measured_s: float
    ttft_p90_ms: float | UnsetType = UNSET
    ttft_p99_ms: float | UnsetType = UNSET
    tbt_p90_ms: float | UnsetType = UNSET
    tbt_p99_ms: float | UnsetType = UNSET


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), interpolating linearly between the closest ranks: p50 is the median."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def tail_percentiles(ttfts: Sequence[float], gaps: Sequence[float]) -> dict[str, float]:
    """p90 and p99 of the requests' TTFTs and time between tokens (seconds in, ms out); none without requests."""
    found = {}
    for name, values in (("ttft", ttfts), ("tbt", gaps)):
        if values:
            found[f"{name}_p90_ms"] = percentile(values, 90) * 1000
            found[f"{name}_p99_ms"] = percentile(values, 99) * 1000
    return found


def window_figures(window_us: int, requests: Iterable[RequestRecord]) -> WindowFigures:
    """The figures of a window of `window_us` microseconds (WindowRecord.window_us) from its requests' records.

    - total tok/s: every token that arrived in the window ÷ its length;
    - per-request tok/s: the median over requests of (tokens − 1) ÷ (last − first token);
    - TTFT: the median of first token − start; time between tokens: the median of each request's
      mean gap; their p90 and p99 likewise over the requests;
    - average active: the time each request streamed inside the window (from its first token or
      the window's start, to its end or the window's end), summed, ÷ the window's length;
    - completed: requests that finished inside the window.
    """
    window_s = window_us / MICROSECONDS
    tokens = completed = 0
    active = 0.0
    rates, gaps, ttfts = [], [], []
    for request in requests:
        times = request.times()
        seen = bisect.bisect_right(times, window_s)
        if not seen:
            continue
        count = sum(request.counts[:seen])
        first, last = times[0], times[seen - 1]
        tokens += count
        ttfts.append(first - request.start_us / MICROSECONDS)
        if count > 1 and last > first:
            rates.append((count - 1) / (last - first))
            gaps.append((last - first) / (count - 1))
        end = request.end_us / MICROSECONDS if request.end_us is not None else None
        done = end is not None and end <= window_s
        completed += done
        active += max(0.0, (end if done else window_s) - max(first, 0.0))
    return WindowFigures(
        total_tok_s=tokens / window_s,
        per_request_tok_s=statistics.median(rates) if rates else None,
        ttft_ms=statistics.median(ttfts) * 1000 if ttfts else None,
        tbt_ms=statistics.median(gaps) * 1000 if gaps else None,
        avg_active=active / window_s,
        completed=completed,
        output_tokens=tokens,
        measured_s=window_s,
        **tail_percentiles(ttfts, gaps),
    )


def records_path(out: Path) -> Path:
    """Where the request records of the bundle at `out` live: beside it."""
    return out.with_name(out.name.removesuffix(".json") + ".requests.jsonl.gz")


def append_window(path: Path, window: WindowRecord, requests: Sequence[RequestRecord]) -> None:
    """Append one window and its requests to the records file (a gzip member of its own), durably."""
    lines = b"".join(_encoder.encode(item) + b"\n" for item in (window, *requests))
    with path.open("ab") as handle:
        handle.write(gzip.compress(lines, compresslevel=9, mtime=0))
        handle.flush()


def cut_torn_tail(path: Path) -> None:
    """Cut a records file back to its last whole gzip member: a crash or a full disk can leave the
    last window half written, and what is appended next must not follow a broken member."""
    if not path.is_file():
        return
    data = path.read_bytes()
    good = offset = 0
    while offset < len(data):
        member = zlib.decompressobj(wbits=31)
        try:
            member.decompress(data[offset:])
        except zlib.error:
            break
        if not member.eof:
            break
        offset = len(data) - len(member.unused_data)
        good = offset
    if good < len(data):
        with path.open("r+b") as handle:
            handle.truncate(good)


def read_windows(path: Path) -> Iterator[tuple[WindowRecord, list[RequestRecord]]]:
    """Each window of a records file with its requests, in the order written; raises ValueError on a damaged file."""
    window: WindowRecord | None = None
    requests: list[RequestRecord] = []
    with gzip.open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            try:
                record = _decoder.decode(line)
            except msgspec.DecodeError as exc:
                raise ValueError(f"line {number}: {exc}") from None
            if isinstance(record, WindowRecord):
                if window is not None:
                    yield window, requests
                window, requests = record, []
            elif window is None:
                raise ValueError(f"line {number}: a request before any window")
            else:
                requests.append(record)
    if window is not None:
        yield window, requests
