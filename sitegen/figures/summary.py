"""One run's headline figures, for the cross-run index, its exports and the feed."""

from __future__ import annotations

import datetime as dt
import operator
from collections import Counter

import msgspec

from runner.bundle.display import has_value, prefill_has_value
from runner.bundle.schema import STATUSES, Bundle, DecodeCell
from sitegen.figures.gpus import output_gpus, per_gpu
from sitegen.figures.serving import best_joules_per_output_token, given, median_acceptance_length
from sitegen.slug import slugify

PREFILL_HEADLINE_TOKENS = 8192


class RunSummary(msgspec.Struct, kw_only=True, frozen=True):
    """What the index shows of a run: identity, setup and its best numbers (None when unknown)."""

    id: str
    model: str
    model_slug: str
    gpu: str | None
    gpu_slug: str | None
    gpu_count: int | None
    engine: str
    version: str | None
    quantization: str | None
    measured_at: dt.datetime | None
    max_context_tokens: int | None
    single_stream_tok_s: float | None
    peak_tok_s: float | None
    peak_context_tokens: int | None
    peak_concurrency: int | None
    peak_tok_s_per_gpu: float | None
    prefill_8k_tok_s: float | None
    status_counts: dict[str, int]
    # How it was served; fields after status_counts follow the links in runs.csv (exports), so the
    # columns readers had keep their places.
    api: str | None = None
    speculative_method: str | None = None
    speculative_tokens: int | None = None
    mean_acceptance_length: float | None = None  # the median over the valued cells that have one
    best_joules_per_output_token: float | None = None  # the lowest among the valued cells' valid readings
    prefill_gpus: int | None = None
    decode_gpus: int | None = None


_CELL_ORDER = operator.attrgetter("context_tokens", "concurrency")


def valued_cells(bundle: Bundle) -> list[DecodeCell]:
    """The decode cells with a value, ordered by context then concurrency."""
    return sorted((c for c in bundle.decode if has_value(c)), key=_CELL_ORDER)


def valued_by_cell(bundle: Bundle) -> dict[tuple[int, int], DecodeCell]:
    """The decode cells with a value by (context, concurrency), for lookups that need no order."""
    return {(c.context_tokens, c.concurrency): c for c in bundle.decode if has_value(c)}


def max_context_tokens(bundle: Bundle, valued: list[DecodeCell]) -> int | None:
    """The largest context measured with a value, in prefill or among the run's valued_cells."""
    contexts = [c.context_tokens for c in valued]
    contexts += [p.context_tokens for p in bundle.prefill if prefill_has_value(p)]
    return max(contexts, default=None)


def single_stream_tok_s(valued: list[DecodeCell]) -> float | None:
    """Decode tok/s of one request alone, at the smallest context that has a value, among a run's valued_cells."""
    return next((c.total_tok_s for c in valued if c.concurrency == 1), None)


def peak_cell(valued: list[DecodeCell]) -> DecodeCell | None:
    """Among a run's valued_cells, the one with the highest total tok/s; ties go to fewer requests, then shorter context."""
    return max(valued, key=lambda c: (c.total_tok_s, -c.concurrency, -c.context_tokens), default=None)


def prefill_tok_s_at(bundle: Bundle, tokens: int) -> float | None:
    """Prompt tok/s at exactly `tokens` of context, when measured with a value."""
    found = [p.prompt_tok_s for p in bundle.prefill if p.context_tokens == tokens and prefill_has_value(p)]
    return found[0] if found else None


def status_counts(bundle: Bundle) -> dict[str, int]:
    """Decode cells per status, every status present (zero when absent), in schema order."""
    counts = Counter(c.status for c in bundle.decode)
    return {status: counts[status] for status in STATUSES}


def summarize(bundle: Bundle) -> RunSummary:
    """Build the index summary of one run."""
    hw = bundle.hardware
    topology = given(bundle.topology)
    valued = valued_cells(bundle)
    peak = peak_cell(valued)
    peak_tok_s = peak.total_tok_s if peak else None
    return RunSummary(
        id=bundle.id,
        model=bundle.model,
        model_slug=slugify(bundle.model),
        gpu=hw.gpu,
        gpu_slug=slugify(hw.gpu) if hw.gpu else None,
        gpu_count=hw.gpu_count,
        engine=bundle.engine.name,
        version=bundle.engine.version,
        quantization=bundle.engine.quantization,
        measured_at=bundle.measured_at,
        max_context_tokens=max_context_tokens(bundle, valued),
        single_stream_tok_s=single_stream_tok_s(valued),
        peak_tok_s=peak_tok_s,
        peak_context_tokens=peak.context_tokens if peak else None,
        peak_concurrency=peak.concurrency if peak else None,
        peak_tok_s_per_gpu=per_gpu(peak_tok_s, output_gpus(bundle)) if peak_tok_s is not None else None,
        prefill_8k_tok_s=prefill_tok_s_at(bundle, PREFILL_HEADLINE_TOKENS),
        status_counts=status_counts(bundle),
        api=given(bundle.run.api),
        speculative_method=given(bundle.engine.speculative_method),
        speculative_tokens=given(bundle.engine.speculative_tokens),
        mean_acceptance_length=median_acceptance_length(valued),
        best_joules_per_output_token=best_joules_per_output_token(valued),
        prefill_gpus=topology.prefill_gpus if topology else None,
        decode_gpus=topology.decode_gpus if topology else None,
    )
