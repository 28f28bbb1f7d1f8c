"""What the capacity views show: the run page's capacity section, the ranking page and the CLI's table,
as display strings and the data capacity.js reads. The rule itself is sitegen/figures/capacity.py's."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from runner.bundle import formats as f
from runner.bundle.schema import Bundle
from runner.bundle.terminal_text import printable
from sitegen.figures.capacity import (
    CHAT,
    NONE_QUALIFIES,
    PRESETS,
    RANK_BY,
    TOK_S_PER_GPU,
    Pick,
    Preset,
    RankedRun,
    Standing,
    Target,
    cells_by_context,
    common_context,
    has_energy,
    pick_from,
    rank_key,
    ranked_run,
    run_picks,
)
from sitegen.views.charts import figure_script_json as script_json
from sitegen.views.charts import script_safe
from sitegen.views.figure_formats import joules
from sitegen.views.runview import title

T = TypeVar("T")


class Answer(msgspec.Struct, frozen=True):
    """A Pick as display strings, for the CLI's table and the pages."""

    context: str
    requests: str
    total: str
    per_gpu: str
    usd: str
    qualified: bool
    joules: str = f.EMPTY
    per_kw: str = f.EMPTY


def answer(found: Pick) -> Answer:
    """The display strings of one context's answer ("—" for an unknown figure)."""
    return Answer(
        context=f.context_label(found.context_tokens),
        requests=f.count(found.concurrency),
        total=f.tok_s(found.total_tok_s),
        per_gpu=f.tok_s(found.tok_s_per_gpu),
        usd=f.usd(found.usd_per_million_tokens),
        qualified=found.concurrency is not None,
        joules=joules(found.joules_per_output_token),
        per_kw=f.tok_s(found.tok_s_per_kw),
    )


# The CLI table's columns: header and the answer's field; energy where the run has readings, cost with a price.
BASE_COLUMNS = (("Context", "context"), ("Requests at once", "requests"), ("Total tok/s", "total"), ("tok/s per GPU", "per_gpu"))


ENERGY_COLUMNS = (("J per output token", "joules"), ("tok/s per kW", "per_kw"))


COST_COLUMNS = (("USD per million output tokens", "usd"),)


def text_table(bundle: Bundle, target: Target, by: str = TOK_S_PER_GPU) -> str:
    """The CLI's answer for people: the run, the target (and what chooses the cell, where not the
    default), then one aligned line per context."""
    run = ranked_run(bundle)
    energy = has_energy(run)
    columns = BASE_COLUMNS + (ENERGY_COLUMNS if energy else ()) + (COST_COLUMNS if target.gpu_hour_usd is not None else ())
    header = [name for name, _ in columns]
    rows = [answer(p) for p in run_picks(run, target, by)]
    texts = [[getattr(r, field) for _, field in columns] for r in rows]
    full = [header] + [t for r, t in zip(rows, texts) if r.qualified]
    widths = [max(len(line[i]) for line in full) for i in range(len(header))]
    widths[0] = max([widths[0]] + [len(r.context) for r in rows])

    def line(values: list[str]) -> str:
        return "  ".join([values[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(values[1:], widths[1:])])

    out = [printable(title(bundle)), target.describe()]  # for a terminal: names escaped
    if by != TOK_S_PER_GPU:
        out.append(f"Of the cells that meet both targets, the one with the {RANK_BY[by]}")
    out += ["", line(header)]
    for r, values in zip(rows, texts):
        out.append(line(values) if r.qualified else f"{r.context.ljust(widths[0])}  {NONE_QUALIFIES}")
    if not rows:
        out.append("The run has no decode cells.")
    if by != TOK_S_PER_GPU and not energy:
        out += ["", "The run has no valid energy readings, so each context's busiest qualifying cell is shown."]
    if not run.gpus:
        out += ["", "The run does not record its GPU count, so tok/s per GPU and the cost are unknown."]
    return "\n".join(out)


class PresetRow(msgspec.Struct, frozen=True):
    """One context of the run page's build-time table: an answer per preset."""

    label: str
    answers: list[Answer]


def preset_rows(bundle: Bundle, presets: tuple[Preset, ...] = PRESETS) -> list[PresetRow]:
    """The build-time capacity table: rows by context, a column per preset target."""
    run = ranked_run(bundle)
    return run_preset_rows(run, [f.context_label(c) for c in run.contexts], presets)


def run_preset_rows(run: RankedRun, labels: list[str], presets: tuple[Preset, ...] = PRESETS) -> list[PresetRow]:
    """preset_rows of a run as the ranking keeps it, given its contexts' labels."""
    groups = cells_by_context(run.cells)
    return [
        PresetRow(label, [answer(pick_from(groups.get(context, []), run, context, p.target)) for p in presets])
        for context, label in zip(run.contexts, labels)
    ]


RANKING_SCREEN = 100  # ranked runs the page renders as HTML; a reader's own targets rank every run from the chunks


RANKING_CHUNK = 1000  # runs per ranking data chunk: about 1.4 MB of script


def chunk_record(run: RankedRun) -> bytes:
    """A run's record in the ranking's data chunks: its RankedRun as JSON, safe inside a script (the escapes
    are of single characters, so joining safe records gives what escaping the joined text would)."""
    return script_safe(msgspec.json.encode(run).decode()).encode()


def ranking_chunks(runs: list[T]) -> list[list[T]]:
    """The runs (in the order given: by id) cut into the ranking's data chunks, RANKING_CHUNK runs each."""
    return [runs[start:start + RANKING_CHUNK] for start in range(0, len(runs), RANKING_CHUNK)]


def ranking_script(index: int, records: list[bytes]) -> bytes:
    """A data chunk's script, of its runs' chunk_record records: capacity.js ranks with these when a
    reader sets a target."""
    return b"window.speedMatrixRanking(%d,[%b]);\n" % (index, b",".join(records))


class CapacityView(msgspec.Struct, frozen=True):
    """The run page's capacity section: the preset targets, their answers, and the data for capacity.js."""

    presets: tuple[Preset, ...]
    rows: list[PresetRow]
    data: str
    start: Target = CHAT.target
    none: str = NONE_QUALIFIES


def capacity_view(bundle: Bundle) -> CapacityView:
    """Everything `_capacity.html` shows of one run, and what capacity.js reads: the GPU count (and the
    GPUs paid for, where they differ), the context labels and every Valid cell (its records and labels
    made once for both)."""
    run = ranked_run(bundle)
    labels = [f.context_label(c) for c in run.contexts]
    data = {"gpus": run.gpus, "contexts": [[c, label] for c, label in zip(run.contexts, labels)], "cells": run.cells}
    if run.paid_gpus != run.gpus:
        data["paid_gpus"] = run.paid_gpus
    return CapacityView(PRESETS, run_preset_rows(run, labels), script_json(data))


class RankingView(msgspec.Struct, frozen=True):
    """The ranking page: the contexts to choose from, the default choice and its first screen of answers;
    where any run has energy readings, the energy columns and the choice to rank by them."""

    contexts: list[tuple[int, str]]
    context: int
    label: str
    target: Target
    rows: list[Ranked]
    total: int
    energy: bool = False

    @property
    def rank_by(self) -> dict[str, str]:
        """What the reader may rank by, and the words for it."""
        return RANK_BY


def ranking_view(runs: list[Standing]) -> RankingView | None:
    """The ranking at the context most runs measured and the Chat preset, from the runs' standings (by id);
    None for a site without decode cells."""
    measured = [p.context_tokens for run in runs for p in run.picks]
    context = common_context(measured)
    if context is None:
        return None
    picks = [(r.id, r.title, next((p for p in r.picks if p.context_tokens == context), None)) for r in runs]
    return RankingView(
        contexts=[(c, f.context_label(c)) for c in sorted(set(measured))], context=context, label=f.context_label(context),
        target=CHAT.target, rows=ranked_rows(picks, context, RANKING_SCREEN), total=len(runs), energy=any(r.energy for r in runs),
    )


class Ranked(msgspec.Struct, frozen=True):
    """One run's place in the ranking: its answer at the chosen context, or why it has none."""

    id: str
    title: str
    answer: Answer | None
    reason: str | None


def ranking(runs: list[RankedRun], context: int, target: Target, by: str = TOK_S_PER_GPU) -> list[Ranked]:
    """Runs ranked by capacity at one context and target; runs that did not measure it come last."""
    picks = [(r.id, r.title, pick_from(r.cells, r, context, target, by) if context in r.contexts else None)
             for r in sorted(runs, key=lambda r: r.id)]
    return ranked_rows(picks, context, by=by)


def ranked_rows(picks: list[tuple[str, str, Pick | None]], context: int, limit: int | None = None,
                by: str = TOK_S_PER_GPU) -> list[Ranked]:
    """The first `limit` (all by default) of runs ranked by their picks at `context`: each run's id, title
    and pick there (None when it did not measure it), in id order; rank_key decides, ties keep that
    order, and runs that did not measure the context come last. Only the rows kept are formatted."""
    measured = sorted((p for p in picks if p[2] is not None), key=lambda p: rank_key(p[2], by))
    unmeasured = [p for p in picks if p[2] is None]
    return [placed(run_id, title, found, context) for run_id, title, found in (measured + unmeasured)[:limit]]


def placed(run_id: str, title: str, found: Pick | None, context: int) -> Ranked:
    """One run's row of the ranking: its answer, or why it has none."""
    if found is None:
        return Ranked(run_id, title, None, f"not measured at {f.context_label(context)}")
    return Ranked(run_id, title, answer(found), None if found.concurrency is not None else NONE_QUALIFIES)
