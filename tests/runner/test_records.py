"""Raw request records beside the bundle: every request of every kept window, recomputing the
cell's figures exactly through the one documented function."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from runner.bundle.records import read_windows, records_path, window_figures
from runner.journal import journal_path
from runner.simulator import SimConfig
from tests.builders import measure_simulator

FIGURES = ("total_tok_s", "per_request_tok_s", "ttft_ms", "tbt_ms", "avg_active", "completed", "output_tokens",
           "measured_s", "ttft_p90_ms", "ttft_p99_ms", "tbt_p90_ms", "tbt_p99_ms")


def _recomputed(out: Path) -> dict[tuple[int, int, int], object]:
    """Each window's figures from the records file, by (context, concurrency, repeat); the last window counts."""
    return {(w.context, w.concurrency, w.repeat): window_figures(w.window_us, requests)
            for w, requests in read_windows(records_path(out))}


def test_the_records_recompute_every_cell_and_repeat_exactly(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    bundle = measure_simulator(SimConfig(max_model_len=8192), out, contexts=[1024, 2048], concurrency=[1, 3],
                               duration=0.6, max_output=48, repeats=2)
    again = _recomputed(out)
    assert len(again) == 8
    for cell in bundle.decode:
        for repeat, measured in enumerate(cell.repeats or [cell]):
            figures = again[cell.context_tokens, cell.concurrency, repeat]
            assert {name: getattr(figures, name) for name in FIGURES} == {name: getattr(measured, name) for name in FIGURES}
    # Plain gzip'd JSON lines: a window line, then its requests, as zcat | jq would read them.
    lines = [json.loads(line) for line in gzip.open(records_path(out), "rt")]
    assert lines[0]["kind"] == "window" and lines[1]["kind"] == "request"
    assert all(line["status"] in ("finished", "cut") for line in lines if line["kind"] == "request")


def test_a_resumed_run_appends_the_windows_it_measures(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    options = dict(contexts=[1024], prefill_contexts=[1024], concurrency=[1, 2], duration=0.5, max_output=32)
    measure_simulator(SimConfig(max_model_len=8192), out, **options)
    journal = journal_path(out)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]))  # the last cell, not journaled
    bundle = measure_simulator(SimConfig(max_model_len=8192), out, resume=True, **options)
    windows = list(read_windows(records_path(out)))
    assert [(w.context, w.concurrency) for w, _ in windows] == [(1024, 1), (1024, 2), (1024, 2)]
    last = bundle.decode[-1]
    assert _recomputed(out)[1024, 2, 0].total_tok_s == last.total_tok_s  # the window measured again counts


def test_a_torn_last_window_is_cut_before_a_resume_appends(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    options = dict(contexts=[1024], prefill_contexts=[1024], concurrency=[1, 2], duration=0.5, max_output=32)
    measure_simulator(SimConfig(max_model_len=8192), out, **options)
    records = records_path(out)
    whole = records.read_bytes()
    records.write_bytes(whole + whole[: len(whole) // 3])  # a crash mid-write left half a window
    journal = journal_path(out)
    journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:-1]))
    measure_simulator(SimConfig(max_model_len=8192), out, resume=True, **options)
    assert [(w.context, w.concurrency) for w, _ in read_windows(records)] == [(1024, 1), (1024, 2), (1024, 2)]
