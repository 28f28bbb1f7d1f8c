"""Display rows for the run tables of the index, model and GPU pages."""

from __future__ import annotations

import msgspec

from sitegen import formats as f
from sitegen.summary import RunSummary

# (sort key, header, kind): kind "number" sorts numerically in the browser.
COLUMNS = (
    ("model", "Model", "text"), ("gpu", "GPU", "text"), ("engine", "Engine", "text"),
    ("quantization", "Quantization", "text"), ("date", "Date", "text"), ("max_context", "Max context", "number"),
    ("single", "Single stream tok/s", "number"), ("peak", "Peak total tok/s", "number"),
    ("per_gpu", "Peak tok/s per GPU", "number"), ("prefill_8k", "Prefill tok/s at 8K", "number"),
)


class Facet(msgspec.Struct, frozen=True):
    """A filter on the index: its field name, label and the values present."""

    name: str
    label: str
    values: list[str]


class RunRow(msgspec.Struct, frozen=True):
    """One run's row: the summary and its display strings."""

    s: RunSummary
    engine: str
    date: str
    date_sort: str
    max_context: str
    single: str
    peak: str
    peak_cell: str | None
    per_gpu: str
    prefill_8k: str


def run_row(summary: RunSummary) -> RunRow:
    """The display strings of one run's row; the peak's cell ("8K × 64") goes on a line of its own."""
    peak_cell = None
    if summary.peak_context_tokens is not None and summary.peak_concurrency is not None:
        peak_cell = f"{f.context_label(summary.peak_context_tokens)} × {summary.peak_concurrency}"
    return RunRow(
        s=summary,
        engine=" ".join(p for p in (summary.engine, summary.version) if p),
        date=f"{summary.measured_at:%Y-%m-%d}" if summary.measured_at else f.EMPTY,
        date_sort=summary.measured_at.isoformat() if summary.measured_at else "",
        max_context=f.context_label(summary.max_context_tokens) if summary.max_context_tokens else f.EMPTY,
        single=f.tok_s(summary.single_stream_tok_s),
        peak=f.tok_s(summary.peak_tok_s),
        peak_cell=peak_cell,
        per_gpu=f.tok_s(summary.peak_tok_s_per_gpu),
        prefill_8k=f.tok_s(summary.prefill_8k_tok_s),
    )


def newest_first(summaries: list[RunSummary]) -> list[RunRow]:
    """Rows newest first, undated runs last, ties by id: the order without JavaScript."""
    dated = sorted((s for s in summaries if s.measured_at), key=lambda s: (s.measured_at, s.id), reverse=True)
    undated = sorted((s for s in summaries if not s.measured_at), key=lambda s: s.id)
    return [run_row(s) for s in dated + undated]


def facets(summaries: list[RunSummary]) -> list[Facet]:
    """Model, GPU and engine filters with the values that occur."""
    def values(get) -> list[str]:
        return sorted({v for s in summaries if (v := get(s))}, key=str.casefold)

    return [
        Facet("model", "Model", values(lambda s: s.model)),
        Facet("gpu", "GPU", values(lambda s: s.gpu)),
        Facet("engine", "Engine", values(lambda s: s.engine)),
    ]
