"""The measurement matrix: which contexts and concurrencies, what is over capacity, how long."""

from __future__ import annotations

import msgspec

MIN_DEFAULT_CONTEXT = 8192
HEADROOM_TOKENS = 1024
# Rough cost of warming prompts and starting streams, per decode cell, for the ETA.
CELL_OVERHEAD_S = 2.0
# The defaults in words, for --help; they follow the constants so the two cannot drift apart.
DEFAULT_CONTEXTS_TEXT = (f"powers of two from {MIN_DEFAULT_CONTEXT // 1024}K below the usable maximum, then the "
                         f"usable maximum = max model length − max output − {HEADROOM_TOKENS // 1024}K")
DEFAULT_PREFILL_TEXT = "the decode contexts plus the max model length"


class PlanSpec(msgspec.Struct, kw_only=True):
    """The matrix a run measures; stored in the journal so --resume finishes the same one."""

    contexts: list[int]
    prefill_contexts: list[int]
    concurrency: list[int]
    duration: float
    max_output: int
    kv_capacity: int | None = None
    max_model_len: int | None = None
    repeats: int = 1


def usable_max_context(max_model_len: int, max_output: int) -> int:
    """Longest decode context: room for the output plus 1K of headroom."""
    return max(1, max_model_len - max_output - HEADROOM_TOKENS)


def default_contexts(max_model_len: int, max_output: int) -> list[int]:
    """Powers of two from 8K while below the usable maximum, then the usable maximum."""
    usable = usable_max_context(max_model_len, max_output)
    contexts = []
    context = MIN_DEFAULT_CONTEXT
    while context < usable:
        contexts.append(context)
        context *= 2
    return contexts + [usable]


def default_prefill_contexts(contexts: list[int], max_model_len: int | None) -> list[int]:
    """The decode contexts plus the max model length."""
    return sorted(set(contexts) | ({max_model_len} if max_model_len else set()))


def over_capacity(context: int, concurrency: int, max_output: int, kv_capacity: int | None) -> bool:
    """True when N requests of C + max output tokens cannot all fit in the KV cache."""
    return kv_capacity is not None and concurrency * (context + max_output) > kv_capacity


def decode_cells(spec: PlanSpec) -> list[tuple[int, int]]:
    """Every (context, concurrency) cell in measuring order: rows by context, then concurrency."""
    return [(c, n) for c in spec.contexts for n in spec.concurrency]


# One item of a run: (context, concurrency, repeat); concurrency None is the prefill point at that context.
Item = tuple[int, int | None, int]


def measuring_order(spec: PlanSpec) -> list[Item]:
    """Every item of the run in measuring order.

    The first pass is the whole matrix, row by row, each row after its prefill point. With
    repeats, every decode cell that will run is measured again in each further pass, so a
    cell's repeats lie a whole pass apart, not back to back.
    """
    rows = [[(c, None, 0)] * (c in spec.prefill_contexts) + [(c, n, 0) for n in spec.concurrency] for c in spec.contexts]
    extra = [(c, None, 0) for c in spec.prefill_contexts if c not in spec.contexts]
    runs = [(c, n) for c, n in decode_cells(spec) if not over_capacity(c, n, spec.max_output, spec.kv_capacity)]
    return [item for row in rows for item in row] + extra + [(c, n, r) for r in range(1, spec.repeats) for c, n in runs]


def estimate_seconds(spec: PlanSpec, prefill_tok_s: float = 10_000.0) -> float:
    """Rough wall time of the whole matrix, for `runner probe` and the progress ETA."""
    seconds = 0.0
    for context, concurrency in decode_cells(spec):
        if not over_capacity(context, concurrency, spec.max_output, spec.kv_capacity):
            seconds += (spec.duration + CELL_OVERHEAD_S) * spec.repeats
    seconds += sum(spec.prefill_contexts) / prefill_tok_s
    return seconds
