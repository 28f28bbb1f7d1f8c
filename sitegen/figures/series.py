"""Runs of one setup over time: the series they form, their key figures by date, and the rule that marks a
newest run as a regression or an improvement against its series' baseline.

A series is the same model, GPU type and count, engine, quantization and launch flags, with ports, hosts,
paths and secrets normalised away, so that two runs of one deployment on different days, ports or machines
fall together while a changed flag starts a new series. Engine versions are not in the key: following a
setup across versions is what a series is for.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import statistics
from collections.abc import Iterable
from typing import Literal

import msgspec

from runner.bundle import formats as f
from runner.bundle.display import prefill_has_value
from runner.bundle.ids import readable_slug
from runner.bundle.redact import secret_name
from runner.bundle.schema import Bundle
from sitegen.figures.compare import launch_options
from sitegen.figures.summary import peak_cell, single_stream_tok_s, valued_cells

# Launch flags whose values differ between runs of one setup without changing it.
_PLACE_WORDS = ("port", "host")
# What names the program rather than configures it: the words before the first option, and Python's `-m module`.
_PROGRAM = ("command", "-m")
PATH_VALUE = "<path>"
SLUG_HEAD = 48  # characters of the model's slug that head a series id

SINGLE_STREAM = "Single-stream tok/s"
PEAK = "Peak total tok/s"

# The rule, after the PyTorch HUD's: the median of a baseline window against the newest run, by a ratio.
BASELINE_RUNS = 5  # runs before the newest that form the baseline
MIN_BASELINE_RUNS = 3  # fewer cannot say how noisy the setup is, so no notice is given
MIN_THRESHOLD = 0.05  # a change under 5 % is within what reruns of one setup on one machine show
NOISE_SIGMAS = 3.0  # the baseline's own scatter, as a robust standard deviation, widens the threshold this much
MAD_TO_SIGMA = 1.4826  # a normal distribution's standard deviation per median absolute deviation

Kind = Literal["regression", "improvement"]


class SeriesKey(msgspec.Struct, frozen=True, array_like=True):
    """What makes runs one setup."""

    model: str
    gpu: str | None
    gpu_count: int | None
    engine: str
    quantization: str | None
    flags: tuple[tuple[str, str], ...]

    @property
    def id(self) -> str:
        """A stable id for the series' page: a readable head and a hash of the whole key."""
        digest = hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:12]
        return f"{_head(self.model)}--{digest}"


@functools.lru_cache(maxsize=1 << 12)
def _head(model: str) -> str:
    """A series id's readable head, from its model's name; remembered, as a model's runs share it."""
    return readable_slug(model, SLUG_HEAD) or "series"


class Figure(msgspec.Struct, frozen=True, array_like=True):
    """One key figure of one run: its value, and the spread of its repeats in percent where it has them."""

    value: float
    spread_pct: float | None = None


class SeriesPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One run as its series charts and judges it; small, so the catalogue keeps it between builds."""

    run_id: str
    title: str
    key: SeriesKey
    measured_at: dt.datetime
    version: str | None
    figures: dict[str, Figure]


class Notice(msgspec.Struct, frozen=True, kw_only=True):
    """The newest run of a series is worse (or better) than its baseline beyond the series' noise."""

    kind: Kind
    run_id: str
    figure: str
    newest: float
    baseline: float
    ratio: float
    threshold: float
    baseline_runs: int

    @property
    def change_pct(self) -> float:
        """The newest value against the baseline median, in percent (negative: slower)."""
        return (self.ratio - 1) * 100


class Series(msgspec.Struct, frozen=True, kw_only=True):
    """The runs of one setup, oldest first, the figures at least two of them share, and its notices."""

    key: SeriesKey
    points: list[SeriesPoint]
    figures: list[str]
    notices: list[Notice]

    @property
    def id(self) -> str:
        """The series' id (its key's)."""
        return self.key.id


@functools.lru_cache(maxsize=1 << 12)
def normalised_flags(command: str | None) -> tuple[tuple[str, str], ...]:
    """The launch command's options, sorted, without the program words, ports, hosts and secrets, and with
    path values replaced by a placeholder; remembered, as the runs of a series share their command."""
    flags = []
    for name, value in launch_options(command).items():
        bare = name.lstrip("-").lower()
        if name in _PROGRAM or secret_name(bare) or any(word in bare for word in _PLACE_WORDS):
            continue
        flags.append((name, PATH_VALUE if _is_path(value) else value))
    return tuple(sorted(flags))


def _is_path(value: str) -> bool:
    return "/" in value or value.startswith(("~", "."))


def series_key(bundle: Bundle) -> SeriesKey:
    """The setup a run measured."""
    return SeriesKey(model=bundle.model, gpu=bundle.hardware.gpu, gpu_count=bundle.hardware.gpu_count,
                     engine=bundle.engine.name, quantization=bundle.engine.quantization,
                     flags=normalised_flags(bundle.launch_command))


@functools.lru_cache(maxsize=1 << 12)
def cell_figure(context: int, concurrency: int) -> str:
    """The name of a decode cell's total tok/s as a series figure (remembered: runs share their matrix's cells)."""
    return f"{f.cell_label(context, concurrency)} total tok/s"


@functools.lru_cache(maxsize=1 << 10)
def prefill_figure(context: int) -> str:
    """The name of a prefill point's tok/s as a series figure (remembered as cell_figure is)."""
    return f"Prefill {f.context_label(context)} tok/s"


def series_point(bundle: Bundle, title: str) -> SeriesPoint | None:
    """A run's key figures for its series; None for a run without a measurement date, which no series can place."""
    if bundle.measured_at is None:
        return None
    valued = valued_cells(bundle)
    figures: dict[str, Figure] = {}
    single = single_stream_tok_s(valued)
    if single is not None:
        figures[SINGLE_STREAM] = Figure(single)
    peak = peak_cell(valued)
    if peak is not None and peak.total_tok_s is not None:
        figures[PEAK] = Figure(peak.total_tok_s, _spread(peak.total_tok_s_spread_pct))
    for cell in valued:
        if cell.total_tok_s is not None:
            figures[cell_figure(cell.context_tokens, cell.concurrency)] = Figure(cell.total_tok_s,
                                                                               _spread(cell.total_tok_s_spread_pct))
    for point in bundle.prefill:
        if prefill_has_value(point) and point.prompt_tok_s is not None:
            figures[prefill_figure(point.context_tokens)] = Figure(point.prompt_tok_s)
    return SeriesPoint(run_id=bundle.id, title=title, key=series_key(bundle), measured_at=bundle.measured_at,
                       version=bundle.engine.version, figures=figures)


def _spread(value: object) -> float | None:
    return value if isinstance(value, float | int) and not isinstance(value, bool) else None


def judge(baseline: list[float], newest: Figure) -> tuple[Kind, float, float] | None:
    """Regression or improvement of `newest` against the baseline values, with the ratio and the threshold used;
    None within the noise or with too few baseline runs to know it.

    The threshold is the largest of MIN_THRESHOLD, NOISE_SIGMAS robust standard deviations of the baseline
    (relative to its median), and the newest figure's own repeats' spread."""
    if len(baseline) < MIN_BASELINE_RUNS:
        return None
    middle = statistics.median(baseline)
    if middle <= 0:
        return None
    scatter = MAD_TO_SIGMA * statistics.median(abs(v - middle) for v in baseline) / middle
    threshold = max(MIN_THRESHOLD, NOISE_SIGMAS * scatter, (newest.spread_pct or 0.0) / 100)
    ratio = newest.value / middle
    if ratio < 1 - threshold:
        return "regression", ratio, threshold
    if ratio > 1 + threshold:
        return "improvement", ratio, threshold
    return None


def notices_of(points: list[SeriesPoint], figures: list[str]) -> list[Notice]:
    """The newest run's notices, one per figure that moved beyond the noise, regressions first."""
    if len(points) < 2:
        return []
    newest = points[-1]
    found = []
    for name in figures:
        mine = newest.figures.get(name)
        if mine is None:
            continue
        baseline = [p.figures[name].value for p in points[:-1] if name in p.figures][-BASELINE_RUNS:]
        verdict = judge(baseline, mine)
        if verdict is not None:
            kind, ratio, threshold = verdict
            found.append(Notice(kind=kind, run_id=newest.run_id, figure=name, newest=mine.value,
                                baseline=statistics.median(baseline), ratio=ratio, threshold=threshold,
                                baseline_runs=len(baseline)))
    return sorted(found, key=lambda n: (n.kind != "regression", n.ratio if n.kind == "regression" else -n.ratio))


def shared_figures(points: list[SeriesPoint]) -> list[str]:
    """The figures at least two runs of the series have, the headline ones first, then cells and prefill in
    the order the first run that has them lists them."""
    counts: dict[str, int] = {}
    for point in points:
        for name in point.figures:
            counts[name] = counts.get(name, 0) + 1
    return [name for name, n in counts.items() if n >= 2]


def build_series(points: Iterable[SeriesPoint | None]) -> list[Series]:
    """The series of two runs or more, by id; each with its runs by date (then id) and its notices."""
    groups: dict[SeriesKey, list[SeriesPoint]] = {}
    for point in points:
        if point is not None:
            groups.setdefault(point.key, []).append(point)
    found = []
    for key, members in groups.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda p: (p.measured_at, p.run_id))
        figures = shared_figures(members)
        found.append(Series(key=key, points=members, figures=figures, notices=notices_of(members, figures)))
    return sorted(found, key=lambda s: s.id)
