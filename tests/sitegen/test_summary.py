"""RunSummary: the index's headline figures of a run; also home of the test bundle builder."""

from __future__ import annotations

import datetime as dt

import msgspec

from runner.bundle.schema import (
    Bundle,
    DecodeCell,
    Engine,
    Hardware,
    PrefillPoint,
    RunInfo,
)
from sitegen.summary import RunSummary, summarize

CONTEXTS = (8192, 16384, 32768, 65536, 131072, 257024)
LEVELS = (1, 2, 4, 8, 16, 32, 64, 128)
HOSTILE = "</script><img src=x onerror=alert(1)>\u2028=cmd|' /C calc'!A0 & \u2029"
LAUNCH = (
    '"$HOME/env/bin/vllm" serve org/Model --served-model-name ling --trust-remote-code '
    "--tensor-parallel-size 2 --max-model-len 262144 --api-key <redacted>"
)


def cell_status(context: int, concurrency: int) -> str:
    """A seed-like pattern: long contexts at high concurrency over capacity, one loop, one queue, one failure."""
    if context * concurrency > 131072 * 64:
        return "Over capacity"
    return {(16384, 16): "Looped", (8192, 128): "Requests queued", (32768, 4): "Failed"}.get(
        (context, concurrency), "Valid"
    )


def decode_cell(context: int, concurrency: int, scale: float) -> DecodeCell:
    """One decode cell with numbers that fall with context and rise with concurrency."""
    status = cell_status(context, concurrency)
    if status in ("Over capacity", "Looped", "Failed"):
        error = "HTTP 500: boom" if status == "Failed" else None
        return DecodeCell(context_tokens=context, concurrency=concurrency, status=status, error=error)
    per_request = scale * 170.0 / (1 + concurrency / 40) / (1 + context / 1_000_000)
    return DecodeCell(
        context_tokens=context, concurrency=concurrency, status=status,
        total_tok_s=round(per_request * concurrency * 0.98, 3), per_request_tok_s=round(per_request, 3),
        ttft_ms=40.5 + concurrency * 6.25, tbt_ms=round(1000 / per_request, 3), avg_active=float(concurrency),
        completed=concurrency // 2, output_tokens=int(per_request * concurrency * 30), measured_s=30.0,
    )


def make_bundle(
    run_id: str = "ling-h200",
    model: str = "Ling-3.0-flash-fp4",
    gpu: str | None = "H200 NVL",
    gpu_count: int | None = 2,
    version: str | None = "0.27.2",
    measured_at: dt.datetime | None = dt.datetime(2026, 9, 3, 14, 23, tzinfo=dt.timezone.utc),
    scale: float = 1.0,
    launch_command: str | None = LAUNCH,
) -> Bundle:
    """A seed-shaped bundle: 6 contexts × 8 concurrencies and 7 prefill points."""
    prefill = [
        PrefillPoint(context_tokens=c, status="Valid", prompt_tok_s=scale * 26_000.0 - c / 100, ttft_ms=c / 26.0)
        for c in (*CONTEXTS, 262144)
    ]
    return Bundle(
        id=run_id, model=model, measured_at=measured_at, submitter="@keennaylmx", origin="dev import",
        hardware=Hardware(type="Discrete GPU", gpu=gpu, gpu_count=gpu_count, vram_per_gpu_gb=141, os="linux"),
        engine=Engine(name="vllm", version=version, quantization="MXFP4+FP8", backend="cuda"),
        run=RunInfo(served_model="ling", seconds_per_measurement=30, max_output_tokens=4096),
        launch_command=launch_command,
        prefill=prefill,
        decode=[decode_cell(c, n, scale) for c in CONTEXTS for n in LEVELS],
    )


def test_headline_numbers_come_from_the_right_cells() -> None:
    bundle = make_bundle()
    summary = summarize(bundle)
    by_key = {(c.context_tokens, c.concurrency): c for c in bundle.decode}
    assert summary.single_stream_tok_s == by_key[(8192, 1)].total_tok_s
    valued = [c for c in bundle.decode if c.status in ("Valid", "Requests queued")]
    best = max(valued, key=lambda c: c.total_tok_s)
    assert (summary.peak_context_tokens, summary.peak_concurrency) == (best.context_tokens, best.concurrency)
    assert summary.peak_tok_s == best.total_tok_s
    assert summary.peak_tok_s_per_gpu == best.total_tok_s / 2
    assert summary.prefill_8k_tok_s == bundle.prefill[0].prompt_tok_s
    assert summary.max_context_tokens == 262144


def test_requests_queued_counts_as_a_value_and_can_be_the_peak() -> None:
    summary = summarize(make_bundle())
    assert (summary.peak_context_tokens, summary.peak_concurrency) == (8192, 128)


def test_status_counts_cover_every_cell_and_every_status() -> None:
    bundle = make_bundle()
    counts = summarize(bundle).status_counts
    assert list(counts) == ["Valid", "Over capacity", "Looped", "Requests queued", "Distorted", "Failed"]
    assert sum(counts.values()) == len(bundle.decode) == 48
    assert counts["Looped"] == counts["Requests queued"] == counts["Failed"] == 1
    assert counts["Over capacity"] == 3


def test_identity_and_slugs() -> None:
    summary = summarize(make_bundle(model="Ling 3.0 (Flash)", gpu="H200 NVL"))
    assert (summary.id, summary.engine, summary.version, summary.quantization) == (
        "ling-h200", "vllm", "0.27.2", "MXFP4+FP8"
    )
    assert (summary.model_slug, summary.gpu_slug) == ("ling-3-0-flash", "h200-nvl")
    assert summary.measured_at == dt.datetime(2026, 9, 3, 14, 23, tzinfo=dt.timezone.utc)


def test_single_stream_skips_a_first_row_without_value() -> None:
    bundle = make_bundle()
    first = next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == (8192, 1))
    first.status, first.total_tok_s = "Looped", None
    second = next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == (16384, 1))
    assert summarize(bundle).single_stream_tok_s == second.total_tok_s


def test_unknowns_stay_none() -> None:
    bundle = make_bundle(gpu=None, gpu_count=None, version=None, measured_at=None)
    bundle.prefill = [p for p in bundle.prefill if p.context_tokens != 8192]
    summary = summarize(bundle)
    assert summary.gpu is None and summary.gpu_slug is None and summary.gpu_count is None
    assert summary.peak_tok_s is not None and summary.peak_tok_s_per_gpu is None
    assert summary.prefill_8k_tok_s is None


def test_an_empty_run_summarizes_to_nothing() -> None:
    bundle = Bundle(id="empty", model="M", engine=Engine(name="sglang"))
    summary = summarize(bundle)
    assert summary.max_context_tokens is None and summary.single_stream_tok_s is None
    assert summary.peak_tok_s is None and summary.peak_concurrency is None
    assert set(summary.status_counts.values()) == {0}


def test_summary_round_trips_through_json() -> None:
    summary = summarize(make_bundle())
    assert msgspec.json.decode(msgspec.json.encode(summary), type=RunSummary) == summary
