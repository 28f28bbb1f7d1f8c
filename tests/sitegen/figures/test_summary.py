"""RunSummary: the index's headline figures of a run."""

from __future__ import annotations

import datetime as dt

import msgspec

from runner.bundle.schema import Bundle, Engine
from sitegen.figures.summary import RunSummary, summarize
from sitegen.slug import slugify
from tests.builders import make_bundle


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
    assert (summary.model_slug, summary.gpu_slug) == (slugify("Ling 3.0 (Flash)"), "h200-nvl")
    assert summary.model_slug.startswith("ling-3-0-flash--")  # readable, and its own: "Ling 3.0 Flash" is another name
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
