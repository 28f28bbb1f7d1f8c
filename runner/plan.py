"""The measurement matrix: which contexts and concurrencies, what is over capacity, how long."""

from __future__ import annotations

import math
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING

import msgspec

from runner.errors import MeasureError
from runner.options import (
    MAX_CONCURRENCY,
    MAX_CONTEXT_TOKENS,
    MAX_DURATION_S,
    MAX_OUTPUT_TOKENS,
    MAX_REPEATS,
)

if TYPE_CHECKING:
    from runner.options import Options
    from runner.server_facts import ServerFacts

# The longest run a plan may add up to: past a week, a plan is a typo, not a benchmark.
MAX_RUN_S = 7 * 24 * 3600.0

MIN_DEFAULT_CONTEXT = 8192
HEADROOM_TOKENS = 1024
# Rough cost of warming prompts and starting streams, per decode cell, for the ETA until one is measured.
CELL_OVERHEAD_S = 2.0
# Rough prefill speed, for the estimate of the prefill points.
PREFILL_TOK_S = 10_000.0
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


def plan_for(options: Options, facts: ServerFacts) -> PlanSpec:
    """The matrix to measure: the user's lists, or defaults from the server's max length."""
    max_len = facts.max_model_len
    if options.contexts is None and max_len is None:
        raise MeasureError("the server does not report its max model length; pass --contexts")
    if max_len is not None:  # what a server claims past any model's length plans as the longest sane one
        max_len = min(max_len, MAX_CONTEXT_TOKENS)
    contexts = options.contexts or default_contexts(max_len, options.max_output)
    prefill = options.prefill_contexts or default_prefill_contexts(contexts, max_len)
    spec = PlanSpec(contexts=contexts, prefill_contexts=prefill, concurrency=list(options.concurrency),
                    duration=options.duration, max_output=options.max_output,
                    kv_capacity=facts.kv_capacity, max_model_len=max_len, repeats=options.repeats)
    check_plan(spec)
    return spec


def check_plan(spec: PlanSpec) -> None:
    """Refuse, in one line, a plan past the sane bounds or one that could not finish within MAX_RUN_S."""
    bounds = [
        ("contexts", spec.contexts + spec.prefill_contexts, 1, MAX_CONTEXT_TOKENS),
        ("concurrency", spec.concurrency, 1, MAX_CONCURRENCY),
        ("duration", [spec.duration], 0.1, MAX_DURATION_S),
        ("max output", [spec.max_output], 1, MAX_OUTPUT_TOKENS),
        ("repeats", [spec.repeats], 1, MAX_REPEATS),
    ]
    for name, values, low, high in bounds:
        bad = next((v for v in values if not (math.isfinite(v) and low <= v <= high)), None)
        if bad is not None:
            raise MeasureError(f"{name} {bad!r} is outside {low:g} to {high:,g}")
    if not spec.contexts or not spec.concurrency:
        raise MeasureError("the plan has no decode cell: give at least one context and one concurrency level")
    seconds = estimate_seconds(spec)
    if seconds > MAX_RUN_S:
        raise MeasureError(f"the plan would take about {seconds / 86400:,.0f} days ({len(decode_cells(spec)):,} cells); "
                           "measure fewer contexts or concurrency levels, or shorter windows")


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


def runs(spec: PlanSpec, context: int, concurrency: int) -> bool:
    """True when the decode cell is measured, i.e. not over capacity."""
    return not over_capacity(context, concurrency, spec.max_output, spec.kv_capacity)


def measuring_order(spec: PlanSpec) -> list[Item]:
    """Every item of the run in measuring order.

    The first pass is the whole matrix, row by row, each row after its prefill point. With
    repeats, every decode cell that will run is measured again in each further pass, so a
    cell's repeats lie a whole pass apart, not back to back.
    """
    cells = decode_cells(spec)
    first: list[Item] = []
    for context, row in groupby(cells, key=itemgetter(0)):
        first += [(context, None, 0)] * (context in spec.prefill_contexts) + [(c, n, 0) for c, n in row]
    extra = [(c, None, 0) for c in spec.prefill_contexts if c not in spec.contexts]
    again = [(c, n, r) for r in range(1, spec.repeats) for c, n in cells if runs(spec, c, n)]
    return first + extra + again


def estimate_seconds(spec: PlanSpec, items: list[Item] | None = None, cell_overhead_s: float = CELL_OVERHEAD_S) -> float:
    """Rough wall time of `items` (default: the whole run), for `runner probe` and the progress ETA.

    Each decode cell that runs costs its window plus `cell_overhead_s`, each prefill point its
    prompt at PREFILL_TOK_S.
    """
    items = measuring_order(spec) if items is None else items
    decode = sum(1 for c, n, _ in items if n is not None and runs(spec, c, n))
    prefill = sum(c for c, n, _ in items if n is None)
    return decode * (spec.duration + cell_overhead_s) + prefill / PREFILL_TOK_S
