"""Capacity at a target: per context, the busiest Valid cell that still meets a TTFT and a per-user speed.

One rule, used by `sitegen capacity`, the run page's capacity view and the ranking page;
templates/static/capacity.js repeats it in the browser from the data `capacity_view` embeds.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from typing import TypeVar

import msgspec

from runner.bundle import formats as f
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.charts import figure_script_json as script_json
from sitegen.charts import script_safe
from sitegen.runview import contexts_of, title
from sitegen.summary import per_gpu

T = TypeVar("T")

SECONDS_PER_HOUR = 3600
NONE_QUALIFIES = "no cell meets both targets"


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """What a reader asks of a cell: median TTFT at most `ttft_ms`, median per-request tok/s at least
    `min_tok_s_per_user`; with a GPU-hour price, the cost of a million output tokens too."""

    ttft_ms: float
    min_tok_s_per_user: float
    gpu_hour_usd: float | None = None

    def describe(self) -> str:
        """"TTFT ≤ 1,000 ms · ≥ 20 tok/s per user" (and "· $2.50 per GPU-hour" with a price)."""
        text = f"TTFT ≤ {f.plain_number_commas(self.ttft_ms)} ms · ≥ {f.plain_number_commas(self.min_tok_s_per_user)} tok/s per user"
        if self.gpu_hour_usd is not None:
            text += f" · {f.usd(self.gpu_hour_usd)} per GPU-hour"
        return text


class Preset(msgspec.Struct, frozen=True):
    """A named target the run page answers at build time."""

    name: str
    target: Target


# Chat is where the reader's inputs and the ranking page start.
CHAT = Preset("Chat", Target(ttft_ms=1000, min_tok_s_per_user=20))
PRESETS = (
    Preset("Interactive", Target(ttft_ms=500, min_tok_s_per_user=50)),
    CHAT,
    Preset("Bulk", Target(ttft_ms=10_000, min_tok_s_per_user=5)),
)


class Pick(msgspec.Struct, frozen=True, kw_only=True):
    """One context's answer; `concurrency` and the figures are None when no cell qualifies."""

    context_tokens: int
    concurrency: int | None
    total_tok_s: float | None
    tok_s_per_gpu: float | None
    usd_per_million_tokens: float | None


def check_target(ttft_ms: float, min_tok_s_per_user: float, gpu_hour_usd: float | None) -> Target:
    """A Target from a reader's numbers; ValueError naming the option when one is negative or not finite."""
    for name, value in (("--ttft-ms", ttft_ms), ("--min-tok-s-per-user", min_tok_s_per_user), ("--gpu-hour-usd", gpu_hour_usd)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name}: must be a number of 0 or more, got {value:g}")
    return Target(ttft_ms=ttft_ms, min_tok_s_per_user=min_tok_s_per_user, gpu_hour_usd=gpu_hour_usd)


def meets(record: list, target: Target) -> bool:
    """Whether a Valid cell, by its record ([context, concurrency, total, per-request tok/s, TTFT]), meets
    the target: its median TTFT and median per-request tok/s both within it (bounds included)."""
    _, _, total, per_request, ttft = record
    return total is not None and ttft is not None and ttft <= target.ttft_ms and per_request is not None and per_request >= target.min_tok_s_per_user


def usd_per_million_tokens(gpu_hour_usd: float | None, gpu_count: int | None, total_tok_s: float) -> float | None:
    """price × GPUs ÷ (total tok/s × 3600) × 10⁶; None without a price, a GPU count or any throughput."""
    if gpu_hour_usd is None or not gpu_count or total_tok_s <= 0:
        return None
    return gpu_hour_usd * gpu_count / (total_tok_s * SECONDS_PER_HOUR) * 1e6


def pick_from(cells: list[list], gpus: int | None, context: int, target: Target) -> Pick:
    """The qualifying cell at `context` with the most total tok/s, a tie going to fewer requests,
    among a run's Valid cell records (cell_records, or those of one context)."""
    best = max((c for c in cells if c[0] == context and meets(c, target)), key=lambda c: (c[2], -c[1]), default=None)
    if best is None:
        return Pick(context_tokens=context, concurrency=None, total_tok_s=None, tok_s_per_gpu=None, usd_per_million_tokens=None)
    return Pick(
        context_tokens=context, concurrency=best[1], total_tok_s=best[2], tok_s_per_gpu=per_gpu(best[2], gpus),
        usd_per_million_tokens=usd_per_million_tokens(target.gpu_hour_usd, gpus, best[2]),
    )


def capacity(bundle: Bundle, target: Target) -> list[Pick]:
    """One answer per decode context of the run, shortest context first."""
    return run_picks(ranked_run(bundle), target)


def run_picks(run: RankedRun, target: Target) -> list[Pick]:
    """capacity() of a run as the ranking keeps it."""
    groups = cells_by_context(run.cells)
    return [pick_from(groups.get(context, []), run.gpus, context, target) for context in run.contexts]


class Answer(msgspec.Struct, frozen=True):
    """A Pick as display strings, for the CLI's table and the pages."""

    context: str
    requests: str
    total: str
    per_gpu: str
    usd: str
    qualified: bool


def answer(found: Pick) -> Answer:
    """The display strings of one context's answer ("—" for an unknown figure)."""
    return Answer(
        context=f.context_label(found.context_tokens),
        requests=f.count(found.concurrency),
        total=f.tok_s(found.total_tok_s),
        per_gpu=f.tok_s(found.tok_s_per_gpu),
        usd=f.usd(found.usd_per_million_tokens),
        qualified=found.concurrency is not None,
    )


TABLE_HEADER = ("Context", "Requests at once", "Total tok/s", "tok/s per GPU", "USD per million output tokens")


def text_table(bundle: Bundle, target: Target) -> str:
    """The CLI's answer for people: the run, the target, then one aligned line per context."""
    header = TABLE_HEADER if target.gpu_hour_usd is not None else TABLE_HEADER[:-1]
    rows = [answer(p) for p in capacity(bundle, target)]
    full = [list(header)] + [[r.context, r.requests, r.total, r.per_gpu, r.usd][: len(header)] for r in rows if r.qualified]
    widths = [max(len(line[i]) for line in full) for i in range(len(header))]
    widths[0] = max([widths[0]] + [len(r.context) for r in rows])

    def line(values: list[str]) -> str:
        return "  ".join([values[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(values[1:], widths[1:])])

    out = [title(bundle), target.describe(), "", line(list(header))]
    for r in rows:
        out.append(line([r.context, r.requests, r.total, r.per_gpu, r.usd][: len(header)]) if r.qualified
                   else f"{r.context.ljust(widths[0])}  {NONE_QUALIFIES}")
    if not rows:
        out.append("The run has no decode cells.")
    if not bundle.hardware.gpu_count:
        out += ["", "The run does not record its GPU count, so tok/s per GPU and the cost are unknown."]
    return "\n".join(out)


def json_records(bundle: Bundle, target: Target) -> list[dict]:
    """The CLI's --json answer: context_tokens, concurrency (null when none qualifies), total_tok_s,
    tok_s_per_gpu and usd_per_million_tokens per context."""
    return [msgspec.to_builtins(p) for p in capacity(bundle, target)]


def cell_record(cell: DecodeCell) -> list:
    """A cell as the rule and capacity.js read it: [context, concurrency, total tok/s, per-request tok/s, TTFT ms]."""
    return [cell.context_tokens, cell.concurrency, cell.total_tok_s, cell.per_request_tok_s, cell.ttft_ms]


def cell_records(bundle: Bundle) -> list[list]:
    """The Valid decode cells, the only ones the rule can pick, by context and concurrency, kept short for the ranking page."""
    return [cell_record(c) for c in sorted((c for c in bundle.decode if c.status == "Valid"), key=_CELL_ORDER)]


_CELL_ORDER = operator.attrgetter("context_tokens", "concurrency")


def cells_by_context(cells: list[list]) -> dict[int, list[list]]:
    """Cell records grouped by context, so that each context's picks look only at its own cells."""
    groups: dict[int, list[list]] = {}
    for cell in cells:
        groups.setdefault(cell[0], []).append(cell)
    return groups


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
        PresetRow(label, [answer(pick_from(groups.get(context, []), run.gpus, context, p.target)) for p in presets])
        for context, label in zip(run.contexts, labels)
    ]


class Ranked(msgspec.Struct, frozen=True):
    """One run's place in the ranking: its answer at the chosen context, or why it has none."""

    id: str
    title: str
    answer: Answer | None
    reason: str | None


def rank_key(found: Pick) -> tuple:
    """Best first: tok/s per GPU, then runs of unknown GPU count by total tok/s, then none qualifying."""
    if found.concurrency is None:
        return (2, 0.0)
    if found.tok_s_per_gpu is None:
        return (1, -found.total_tok_s)
    return (0, -found.tok_s_per_gpu)


class RankedRun(msgspec.Struct, frozen=True):
    """One run as the ranking reads it, and capacity.js from the ranking's chunks: its id, title,
    GPU count, decode contexts and Valid cells (cell_records). The build keeps one of these per
    run (about 1.4 KB of JSON) instead of the bundle."""

    id: str
    title: str
    gpus: int | None
    contexts: list[int]
    cells: list[list]


def ranked_run(bundle: Bundle) -> RankedRun:
    """What of a run the ranking reads."""
    return RankedRun(bundle.id, title(bundle), bundle.hardware.gpu_count, contexts_of(bundle), cell_records(bundle))


def ranking(runs: list[RankedRun], context: int, target: Target) -> list[Ranked]:
    """Runs ranked by capacity at one context and target; runs that did not measure it come last."""
    picks = [(r.id, r.title, pick_from(r.cells, r.gpus, context, target) if context in r.contexts else None)
             for r in sorted(runs, key=lambda r: r.id)]
    return ranked_rows(picks, context)


def ranked_rows(picks: list[tuple[str, str, Pick | None]], context: int, limit: int | None = None) -> list[Ranked]:
    """The first `limit` (all by default) of runs ranked by their picks at `context`: each run's id, title
    and pick there (None when it did not measure it), in id order; rank_key decides, ties keep that
    order, and runs that did not measure the context come last. Only the rows kept are formatted."""
    measured = sorted((p for p in picks if p[2] is not None), key=lambda p: rank_key(p[2]))
    unmeasured = [p for p in picks if p[2] is None]
    return [placed(run_id, title, found, context) for run_id, title, found in (measured + unmeasured)[:limit]]


def placed(run_id: str, title: str, found: Pick | None, context: int) -> Ranked:
    """One run's row of the ranking: its answer, or why it has none."""
    if found is None:
        return Ranked(run_id, title, None, f"not measured at {f.context_label(context)}")
    return Ranked(run_id, title, answer(found), None if found.concurrency is not None else NONE_QUALIFIES)


def common_context(contexts: list[int]) -> int | None:
    """The decode context most runs measured (the shorter on a tie), given each run's contexts one after
    another: the ranking's default."""
    counts = Counter(contexts)
    return min(counts, key=lambda c: (-counts[c], c), default=None)


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


class ChatPick(Pick, frozen=True, kw_only=True, array_like=True):
    """A Pick at the Chat target as a run's Standing keeps it: a short JSON array."""


class Standing(msgspec.Struct, frozen=True, array_like=True):
    """A run as the ranking page's first screen ranks it: its id, title and pick at each of its decode
    contexts at the Chat target, where the page starts. Worked out once when its bundle is read and kept
    as JSON (standing_record), so that the page ranks every run without reading their cells again."""

    id: str
    title: str
    picks: list[ChatPick]


def standing_record(run: RankedRun) -> bytes:
    """The run's Standing as JSON."""
    picks = [ChatPick(**msgspec.structs.asdict(p)) for p in run_picks(run, CHAT.target)]
    return msgspec.json.encode(Standing(run.id, run.title, picks))


class CapacityView(msgspec.Struct, frozen=True):
    """The run page's capacity section: the preset targets, their answers, and the data for capacity.js."""

    presets: tuple[Preset, ...]
    rows: list[PresetRow]
    data: str
    start: Target = CHAT.target
    none: str = NONE_QUALIFIES


def capacity_view(bundle: Bundle) -> CapacityView:
    """Everything `_capacity.html` shows of one run, and what capacity.js reads: the GPU count, the
    context labels and every Valid cell (its records and labels made once for both)."""
    run = ranked_run(bundle)
    labels = [f.context_label(c) for c in run.contexts]
    data = {"gpus": run.gpus, "contexts": [[c, label] for c, label in zip(run.contexts, labels)], "cells": run.cells}
    return CapacityView(PRESETS, run_preset_rows(run, labels), script_json(data))


class RankingView(msgspec.Struct, frozen=True):
    """The ranking page: the contexts to choose from, the default choice and its first screen of answers."""

    contexts: list[tuple[int, str]]
    context: int
    label: str
    target: Target
    rows: list[Ranked]
    total: int


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
        target=CHAT.target, rows=ranked_rows(picks, context, RANKING_SCREEN), total=len(runs),
    )
