"""What a series page shows: its title, the chart of its key figures by date with engine versions
labelled, the same values as a table, its runs and its notices; and a notice's one line of text."""

from __future__ import annotations

import msgspec

from runner.bundle import formats as f
from sitegen.figures.series import PEAK, SINGLE_STREAM, Notice, Series, SeriesKey, SeriesPoint
from sitegen.views import charts

CHARTED_CELLS = 4  # cell and prefill figures charted beside the headline ones: more lines hide each other


class SeriesRun(msgspec.Struct, frozen=True):
    """A run of the series as its table lists it."""

    run_id: str
    title: str
    date: str
    version: str
    values: list[str]


class SeriesView(msgspec.Struct, frozen=True, kw_only=True):
    """A series page's values."""

    title: str
    charted: list[str]  # the figures the chart draws and the table lists: its text alternative
    runs: list[SeriesRun]
    notices: list[str]
    figure: str


def notice_text(notice: Notice) -> str:
    """One line saying what moved, by how much, against what and with which threshold."""
    word, side = ("Regression", "below") if notice.kind == "regression" else ("Improvement", "above")
    runs = "run" if notice.baseline_runs == 1 else f"{notice.baseline_runs} runs"
    return (f"{word}: {notice.figure} {abs(notice.change_pct):.1f}% {side} the median of the {runs} before "
            f"(threshold {notice.threshold * 100:.1f}%)")


def headline_first(notices: list[Notice]) -> list[Notice]:
    """The notices on the headline figures first (single-stream, peak), then the others in their order."""
    return sorted(notices, key=lambda n: n.figure not in (SINGLE_STREAM, PEAK))


def series_title(key: SeriesKey) -> str:
    """The setup in words: model on GPU ×count, engine, quantization and the normalised launch flags."""
    gpu = f" on {key.gpu or 'unknown GPU'}" + (f" ×{key.gpu_count}" if key.gpu_count else "")
    parts = [f"{key.model}{gpu}", key.engine] + ([key.quantization] if key.quantization else [])
    # A switch's value is its own name (compare.launch_options).
    flags = " ".join(name if value in ("", name) else f"{name} {value}" for name, value in key.flags)
    return " · ".join(parts + ([flags] if flags else []))


def charted_figures(figures: list[str]) -> list[str]:
    """The figures the chart draws: the headline ones, then the first few cells and prefill points."""
    headline = [name for name in (SINGLE_STREAM, PEAK) if name in figures]
    return headline + [name for name in figures if name not in headline][:CHARTED_CELLS]


def _date(point: SeriesPoint) -> str:
    return point.measured_at.strftime("%Y-%m-%d %H:%M")


def series_figure(points: list[SeriesPoint], charted: list[str]) -> charts.Figure:
    """Each charted figure against measurement date, a line each, every point labelled with its engine version."""
    data = []
    for name in charted:
        members = [p for p in points if name in p.figures]
        data.append({
            "type": "scatter",
            "mode": "lines+markers+text",
            "name": charts.label(name),
            "x": [p.measured_at.isoformat() for p in members],
            "y": [charts.r1(p.figures[name].value) for p in members],
            "text": [charts.label(p.version or "") for p in members],
            "textposition": "top center",
            "hovertemplate": "%{x}: %{y:,.1f} tok/s<br>version %{text}<extra>" + charts.label(name) + "</extra>",
        })
    return charts.figure(data, charts.axis("measured", type="date"), charts.axis("tok/s", rangemode="tozero"))


def series_view(series: Series) -> SeriesView:
    """The page of one series."""
    charted = charted_figures(series.figures)
    runs = [SeriesRun(p.run_id, p.title, _date(p), p.version or "unknown",
                      [f.one_decimal(p.figures[name].value) if name in p.figures else f.EMPTY for name in charted])
            for p in series.points]
    return SeriesView(title=series_title(series.key), charted=charted, runs=runs,
                      notices=[notice_text(n) for n in headline_first(series.notices)],
                      figure=charts.figure_script_json(series_figure(series.points, charted)))
