"""Capacity at a target: per context, the busiest Valid cell that still meets a TTFT and a per-user speed.

One rule, used by `sitegen capacity`, the run page's capacity view and the ranking page;
templates/static/capacity.js repeats it in the browser from the data `capacity_view` embeds.
Where runs have valid energy readings, the rule can choose and rank by energy instead: of the cells
that meet the target, the one with the fewest J per output token, or the most tok/s per kW.
"""

from __future__ import annotations

import math
import operator
from collections import Counter

import msgspec

from runner.bundle import formats as f
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.figures.gpus import output_gpus, paid_gpus, per_gpu
from sitegen.figures.serving import joules_per_output_token, tok_s_per_kw
from sitegen.views.runview import contexts_of, title

SECONDS_PER_HOUR = 3600
NONE_QUALIFIES = "no cell meets both targets"
# What a cell is chosen and a run ranked by, with the words that say so; the first is the default.
TOK_S_PER_GPU, JOULES_PER_OUTPUT_TOKEN, TOK_S_PER_KW = "tok_s_per_gpu", "joules_per_output_token", "tok_s_per_kw"
RANK_BY = {TOK_S_PER_GPU: "most tok/s per GPU", JOULES_PER_OUTPUT_TOKEN: "fewest J per output token", TOK_S_PER_KW: "most tok/s per kW"}
# A cell record's fields (cell_record); the two energy fields only where the cell has a valid reading.
CONTEXT, N, TOTAL, PER_USER, TTFT, JOULES, PER_KW = range(7)


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
    joules_per_output_token: float | None = None
    tok_s_per_kw: float | None = None


def check_target(ttft_ms: float, min_tok_s_per_user: float, gpu_hour_usd: float | None) -> Target:
    """A Target from a reader's numbers; ValueError naming the option when one is negative or not finite."""
    for name, value in (("--ttft-ms", ttft_ms), ("--min-tok-s-per-user", min_tok_s_per_user), ("--gpu-hour-usd", gpu_hour_usd)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name}: must be a number of 0 or more, got {value:g}")
    return Target(ttft_ms=ttft_ms, min_tok_s_per_user=min_tok_s_per_user, gpu_hour_usd=gpu_hour_usd)


def check_by(by: str) -> None:
    """ValueError naming --by when `by` is not a figure the rule chooses by."""
    if by not in RANK_BY:
        raise ValueError(f"--by: must be one of {', '.join(RANK_BY)}, got {by!r}")


def meets(record: list, target: Target) -> bool:
    """Whether a Valid cell, by its record (cell_record), meets the target: its median TTFT and median
    per-request tok/s both within it (bounds included)."""
    total, per_request, ttft = record[TOTAL], record[PER_USER], record[TTFT]
    return total is not None and ttft is not None and ttft <= target.ttft_ms and per_request is not None and per_request >= target.min_tok_s_per_user


def usd_per_million_tokens(gpu_hour_usd: float | None, gpu_count: int | None, total_tok_s: float) -> float | None:
    """price × GPUs ÷ (total tok/s × 3600) × 10⁶; None without a price, a GPU count or any throughput."""
    if gpu_hour_usd is None or not gpu_count or total_tok_s <= 0:
        return None
    return gpu_hour_usd * gpu_count / (total_tok_s * SECONDS_PER_HOUR) * 1e6


def energy_figure(record: list, by: str) -> float | None:
    """A cell record's figure to rank by energy, lower first (J per output token, or tok/s per kW negated);
    None where the cell has no valid reading of it."""
    if len(record) <= JOULES:
        return None
    if by == JOULES_PER_OUTPUT_TOKEN:
        return record[JOULES]
    return -record[PER_KW] if record[PER_KW] is not None else None


def pick_from(cells: list[list], run: RankedRun, context: int, target: Target, by: str = TOK_S_PER_GPU) -> Pick:
    """Among a run's Valid cell records (cell_records, or those of one context), the one at `context` that
    meets the target with the most total tok/s, a tie going to fewer requests; by energy, the one with
    the best energy figure (ties as before), or the busiest where none of them has a valid reading."""
    qualifying = [c for c in cells if c[CONTEXT] == context and meets(c, target)]
    best = max(qualifying, key=lambda c: (c[TOTAL], -c[N]), default=None)
    if by != TOK_S_PER_GPU:
        measured = [c for c in qualifying if energy_figure(c, by) is not None]
        best = min(measured, key=lambda c: (energy_figure(c, by), -c[TOTAL], c[N]), default=best)
    if best is None:
        return Pick(context_tokens=context, concurrency=None, total_tok_s=None, tok_s_per_gpu=None, usd_per_million_tokens=None)
    energy = best[JOULES:]
    return Pick(
        context_tokens=context, concurrency=best[N], total_tok_s=best[TOTAL], tok_s_per_gpu=per_gpu(best[TOTAL], run.gpus),
        usd_per_million_tokens=usd_per_million_tokens(target.gpu_hour_usd, run.paid_gpus, best[TOTAL]),
        joules_per_output_token=energy[0] if energy else None, tok_s_per_kw=energy[1] if energy else None,
    )


def capacity(bundle: Bundle, target: Target, by: str = TOK_S_PER_GPU) -> list[Pick]:
    """One answer per decode context of the run, shortest context first."""
    return run_picks(ranked_run(bundle), target, by)


def run_picks(run: RankedRun, target: Target, by: str = TOK_S_PER_GPU) -> list[Pick]:
    """capacity() of a run as the ranking keeps it."""
    groups = cells_by_context(run.cells)
    return [pick_from(groups.get(context, []), run, context, target, by) for context in run.contexts]


def has_energy(run: RankedRun) -> bool:
    """Whether any of the run's Valid cells has a valid energy reading."""
    return any(len(c) > JOULES for c in run.cells)


def json_records(bundle: Bundle, target: Target, by: str = TOK_S_PER_GPU) -> list[dict]:
    """The CLI's --json answer: context_tokens, concurrency (null when none qualifies), total_tok_s,
    tok_s_per_gpu, usd_per_million_tokens, joules_per_output_token and tok_s_per_kw per context."""
    return [msgspec.to_builtins(p) for p in capacity(bundle, target, by)]


def cell_record(cell: DecodeCell) -> list:
    """A cell as the rule and capacity.js read it: [context, concurrency, total tok/s, per-request tok/s, TTFT ms],
    then [J per output token, tok/s per kW] where it has a valid energy reading (left out elsewhere, so a run
    without one embeds what it did before)."""
    record = [cell.context_tokens, cell.concurrency, cell.total_tok_s, cell.per_request_tok_s, cell.ttft_ms]
    energy = [joules_per_output_token(cell), tok_s_per_kw(cell)]
    return record + energy if energy != [None, None] else record


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


def rank_key(found: Pick, by: str = TOK_S_PER_GPU) -> tuple[int, int, float]:
    """Best first: tok/s per GPU, then runs of unknown GPU count by total tok/s, then none qualifying. By
    energy, the runs whose chosen cell has the figure come first, best first, then the others as by tok/s."""
    if found.concurrency is None:
        return (2, 0, 0.0)
    speed = (0, -found.tok_s_per_gpu) if found.tok_s_per_gpu is not None else (1, -found.total_tok_s)
    if by == TOK_S_PER_GPU:
        return (0, *speed)
    if by == JOULES_PER_OUTPUT_TOKEN:
        figure = found.joules_per_output_token
    else:
        figure = None if found.tok_s_per_kw is None else -found.tok_s_per_kw
    return (0, 0, figure) if figure is not None else (1, *speed)


class RankedRun(msgspec.Struct, frozen=True):
    """One run as the ranking reads it, and capacity.js from the ranking's chunks: its id, title, the GPUs
    its tok/s per GPU divides by (gpus.output_gpus), decode contexts, Valid cells (cell_records) and the
    GPUs a price is paid for (gpus.paid_gpus). The build keeps one of these per run, a small
    fraction of the bundle, instead of the bundle."""

    id: str
    title: str
    gpus: int | None
    contexts: list[int]
    cells: list[list]
    paid_gpus: int | None


def ranked_run(bundle: Bundle) -> RankedRun:
    """What of a run the ranking reads."""
    return RankedRun(bundle.id, title(bundle), output_gpus(bundle), contexts_of(bundle), cell_records(bundle), paid_gpus(bundle))


def common_context(contexts: list[int]) -> int | None:
    """The decode context most runs measured (the shorter on a tie), given each run's contexts one after
    another: the ranking's default."""
    counts = Counter(contexts)
    return min(counts, key=lambda c: (-counts[c], c), default=None)


class ChatPick(Pick, frozen=True, kw_only=True, array_like=True):
    """A Pick at the Chat target as a run's Standing keeps it: a short JSON array."""


class Standing(msgspec.Struct, frozen=True, array_like=True):
    """A run as the ranking page's first screen ranks it: its id, title and pick at each of its decode
    contexts at the Chat target, where the page starts, and whether it has energy readings to rank by.
    Worked out once when its bundle is read and kept as JSON (standing_record), so that the page ranks
    every run without reading their cells again."""

    id: str
    title: str
    picks: list[ChatPick]
    energy: bool


def standing_record(run: RankedRun) -> bytes:
    """The run's Standing as JSON."""
    picks = [ChatPick(**msgspec.structs.asdict(p)) for p in run_picks(run, CHAT.target)]
    return msgspec.json.encode(Standing(run.id, run.title, picks, has_energy(run)))


