"""Tail percentiles and `runner measure --repeats`: by definition, in the journal, and against the simulator."""

from __future__ import annotations

import datetime as dt
import json
import statistics
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from msgspec import UNSET

from runner.bundle.records import percentile, tail_percentiles
from runner.bundle.repeats import combine
from runner.bundle.schema import (
    Bundle,
    DecodeCell,
    Engine,
    decode_bundle,
    encode_bundle,
)
from runner.cell import decode_figures
from runner.journal import Header, Journal, journal_path
from runner.measurement import left_to_measure
from runner.plan import PlanSpec, estimate_seconds, measuring_order
from runner.simulator import SimConfig
from tests.builders import ROOT, make_trace, measure_simulator


def test_percentiles_interpolate_between_ranks_and_p50_is_the_median() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == statistics.median(values) == 50.5
    assert percentile(values, 90) == pytest.approx(90.1)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0], 90) == pytest.approx(2.8)
    tails = tail_percentiles([0.1, 0.2, 0.3, 0.4, 1.0], [0.01, 0.02])
    assert tails == pytest.approx({"ttft_p90_ms": 760.0, "ttft_p99_ms": 976.0, "tbt_p90_ms": 19.0, "tbt_p99_ms": 19.9})
    assert tail_percentiles([], []) == {}


def test_decode_figures_carry_the_tails_of_the_requests_they_saw() -> None:
    # Ten requests, each starting at 0 with its first token at 0.1·k s and a token every 10·k ms.
    traces = [make_trace(0.0, [0.1 * k + 0.01 * k * i for i in range(20)]) for k in range(1, 11)]
    figures = decode_figures(traces, 0.0, 10.0)
    ttfts = [100.0 * k for k in range(1, 11)]
    gaps = [10.0 * k for k in range(1, 11)]
    assert figures.ttft_ms == pytest.approx(statistics.median(ttfts))
    assert figures.ttft_p90_ms == pytest.approx(percentile(ttfts, 90)) == pytest.approx(910.0)
    assert figures.ttft_p99_ms == pytest.approx(991.0)
    assert figures.tbt_ms == pytest.approx(statistics.median(gaps)) == pytest.approx(55.0)
    assert (figures.tbt_p90_ms, figures.tbt_p99_ms) == (pytest.approx(percentile(gaps, 90)), pytest.approx(99.1))
    empty = decode_figures([], 0.0, 1.0)
    assert empty.ttft_p90_ms is UNSET and empty.tbt_p99_ms is UNSET


PLAN = PlanSpec(contexts=[1024, 2048], prefill_contexts=[1024, 4096], concurrency=[1, 8], duration=1, max_output=64,
                kv_capacity=8 * 1100, repeats=3)


def test_repeats_come_a_whole_pass_apart_and_skip_what_is_over_capacity() -> None:
    order = measuring_order(PLAN)
    first = [(1024, None, 0), (1024, 1, 0), (1024, 8, 0), (2048, 1, 0), (2048, 8, 0), (4096, None, 0)]
    runs = [(1024, 1), (1024, 8), (2048, 1)]  # 2048 × 8 needs 8 × 2112 > 8,800 tokens of KV cache
    assert order == first + [(c, n, 1) for c, n in runs] + [(c, n, 2) for c, n in runs]
    once = msgspec.structs.replace(PLAN, repeats=1)
    assert measuring_order(once) == first
    assert estimate_seconds(PLAN) - estimate_seconds(once) == pytest.approx(2 * 3 * (1 + 2.0))


def _cell(total: float | None, status: str = "Valid", **figures: object) -> DecodeCell:
    values = {"per_request_tok_s": total, "ttft_ms": 10.0, "tbt_ms": 5.0, "avg_active": 1.0, "completed": 1,
              "output_tokens": int(total or 0), "measured_s": 1.0} if total is not None else {}
    return DecodeCell(context_tokens=1024, concurrency=1, status=status, total_tok_s=total, **{**values, **figures})


def test_a_repeated_cell_keeps_every_repeat_and_shows_their_medians() -> None:
    repeats = [_cell(100.0, ttft_ms=30.0, completed=3, ttft_p99_ms=50.0), _cell(None, "Looped", completed=0, output_tokens=0),
               _cell(90.0, ttft_ms=10.0, completed=4, ttft_p99_ms=70.0), _cell(120.0, "Requests queued", ttft_ms=20.0, completed=2)]
    cell = combine(repeats)
    assert cell.repeats == repeats
    assert cell.status == "Requests queued"
    assert cell.total_tok_s == 100.0 and cell.ttft_ms == 20.0 and cell.completed == 3
    assert cell.ttft_p99_ms == 60.0 and cell.tbt_p90_ms is UNSET
    assert cell.total_tok_s_spread_pct == pytest.approx((120 - 90) / 100 * 100)
    two = combine([_cell(100.0), _cell(110.0)])
    assert two.status == "Valid" and two.total_tok_s == 105.0 and two.output_tokens == 100
    lost = combine([_cell(None, "Failed", error="boom"), _cell(None, "Looped")])
    assert lost.status == "Failed" and len(lost.repeats) == 2 and lost.total_tok_s_spread_pct is UNSET


def test_journal_holds_each_repeat_and_resumes_the_missing_ones(tmp_path: Path) -> None:
    path = journal_path(tmp_path / "run.json")
    plan = PlanSpec(contexts=[1024], prefill_contexts=[], concurrency=[1, 2], duration=1, max_output=8, repeats=2)
    header = Header(bundle=Bundle(id="x", model="m", engine=Engine(name="e"), measured_at=dt.datetime.now(dt.timezone.utc)), plan=plan)
    journal = Journal.create(path, header)
    journal.record(_cell(100.0))
    journal.record(msgspec.structs.replace(_cell(50.0), concurrency=2))
    journal.record(_cell(80.0), 1)
    journal.close()  # as the runner does on exit: the journal is locked while open
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [line.get("repeat") for line in lines[1:]] == [None, None, 1], "repeat 0 leaves its line as before"
    again = Journal.load(path)
    assert left_to_measure(again) == 1  # 1024 × 2, repeat 2
    cells = again.bundle().decode
    assert [len(c.repeats) if c.repeats is not UNSET else 1 for c in cells] == [2, 1]
    assert cells[0].total_tok_s == 90.0 and cells[1].repeats is UNSET


def test_bundles_without_repeats_or_tails_re_encode_byte_for_byte() -> None:
    for path in sorted((ROOT / "content" / "runs").glob("*.json")):
        assert encode_bundle(decode_bundle(path.read_bytes())) == path.read_bytes(), path.name


FAST = SimConfig(max_model_len=8192, kv_capacity_tokens=32768, max_num_seqs=8, prefill_tok_s=50_000,
                 base_step_ms=10, per_seq_ms=1, per_ktoken_ms=0, tokens_per_chunk=1)


def test_runner_bundle_carries_percentiles_and_repeats(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    bundle = measure_simulator(FAST, out, contexts=[1024], prefill_contexts=[1024], concurrency=[1, 4],
                               duration=1.0, max_output=128, repeats=3)
    assert [c.concurrency for c in bundle.decode] == [1, 4] and len(bundle.prefill) == 1
    for cell in bundle.decode:
        assert cell.status == "Valid" and len(cell.repeats) == 3
        totals = [r.total_tok_s for r in cell.repeats]
        assert cell.total_tok_s == statistics.median(totals)
        assert cell.total_tok_s_spread_pct == pytest.approx((max(totals) - min(totals)) / statistics.median(totals) * 100)
        for measured in [cell, *cell.repeats]:
            assert measured.ttft_ms <= measured.ttft_p90_ms <= measured.ttft_p99_ms
            assert measured.tbt_ms <= measured.tbt_p90_ms <= measured.tbt_p99_ms
            # Every request steps at 10 + 1 ms per running request: time between tokens is that step.
            step = 10 + cell.concurrency
            assert measured.tbt_p99_ms == pytest.approx(step, rel=0.25)
    raw = json.loads(out.read_bytes())
    assert {"ttft_p90_ms", "ttft_p99_ms", "tbt_p90_ms", "tbt_p99_ms", "repeats", "total_tok_s_spread_pct"} <= set(raw["decode"][0])
    order = [(e["cell"]["concurrency"], e.get("repeat", 0)) for e in map(json.loads, journal_path(out).read_bytes().splitlines())
             if e["kind"] == "decode"]
    assert order == [(1, 0), (4, 0), (1, 1), (4, 1), (1, 2), (4, 2)], "repeats are spread across the run"


def test_repeats_option_is_checked_and_shown_in_the_help() -> None:
    bad = subprocess.run([sys.executable, "-m", "runner", "measure", "--repeats", "0"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "--repeats" in bad.stderr
    shown = subprocess.run([sys.executable, "-m", "runner", "measure", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert "--repeats INTEGER RANGE" in shown.stdout
