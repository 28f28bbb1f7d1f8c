"""Plotly figures for run pages and the index, as small deterministic JSON-able dicts.

Figures are plain dicts (data, layout, config) so that no plotly template or
plotly.js ends up in a page: the site carries plotly.js once, as plotly's basic
partial bundle (templates/static/plotly-basic.min.js: scatter, bar and pie, a
quarter of the full bundle, the same plotly.js version as the plotly package's),
and each page inlines only its figures' data. Every trace here is a scatter. Charts add to the tables and
never replace them, so only cells with values are plotted.
"""

from __future__ import annotations

import html
from bisect import bisect_left
from itertools import repeat
from typing import Any, NamedTuple, TypeVar

from runner.bundle.display import prefill_has_value
from runner.bundle.formats import cell_label, context_label
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.figures.gpus import output_gpus, per_gpu
from sitegen.figures.summary import valued_cells
from sitegen.support.fastjson import compact_json
from sitegen.views.runview import title

Figure = dict[str, Any]

# Tableau 10: mid-tone hues that stay readable on light and dark backgrounds.
COLORWAY = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
]
GREY = "rgba(128,128,128,0.35)"
TEXT_GREY = "#808080"
TRANSPARENT = "rgba(0,0,0,0)"
LABEL_LIMIT = 60
CONFIG = {"responsive": True, "displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
LEGEND = {"title": {"text": ""}, "orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom", "yref": "container"}
INDEX_HOVER = "%{text}<br>%{x:,.1f} tok/s per user<br>%{y:,.1f} tok/s per GPU<extra>%{fullData.name}</extra>"
_SCRIPT_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


class Point(NamedTuple):
    """One decode cell on the index chart: per-user speed (x), per-GPU throughput (y), hover text."""

    x: float
    y: float
    text: str


MAX_RUN_TRACES = 20


def label(text: str) -> str:
    """User text for a plotly name or hover: shortened, with plotly's pseudo-HTML tags shown literally."""
    short = text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 1] + "…"
    return html.escape(short, quote=False)


def r1(value: float) -> float:
    """Round to one decimal: enough for a chart, and small in the page."""
    return round(value, 1)


def axis(title_text: str, **extra: Any) -> dict[str, Any]:
    """An axis with a title and mid-grey gridlines that suit light and dark pages."""
    return {"title": {"text": title_text}, "gridcolor": GREY, "zerolinecolor": GREY, "automargin": True, **extra}


def log2_axis(title_text: str, values: list[int]) -> dict[str, Any]:
    """A log axis ticked at the measured powers (1, 2, 4 … 128) instead of decades."""
    return axis(title_text, type="log", tickvals=values, ticktext=[str(v) for v in values])


def figure(data: list[dict[str, Any]], xaxis: dict[str, Any], yaxis: dict[str, Any], legend: bool = True) -> Figure:
    """Wrap traces in the shared layout: transparent backgrounds, relative size, no template.

    The page gives each chart its title, so plotly's toolbar has nothing to cover; the legend
    sits below the plot so that a phone keeps the plot's full width. `legend` shows it even for
    one trace, so a run with a single context still says which it is.
    """
    layout = {
        "xaxis": xaxis,
        "yaxis": yaxis,
        "autosize": True,
        "paper_bgcolor": TRANSPARENT,
        "plot_bgcolor": TRANSPARENT,
        "font": {"color": TEXT_GREY},
        "colorway": COLORWAY,
        "hovermode": "closest",
        "legend": LEGEND,
        "showlegend": legend,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }
    return {"data": data, "layout": layout, "config": CONFIG}


def log_axis(title_text: str, values: list[float]) -> dict[str, Any]:
    """A log axis ticked at 1-2-3-5 steps over the values' range ("200", "1K", "5K"), not every digit."""
    lo, hi = (min(values), max(values)) if values else (1, 10)
    shown = [(t, text) for t, text in LOG_TICKS if lo / 2 <= t <= hi * 2]
    return axis(title_text, type="log", tickvals=[t for t, _ in shown], ticktext=[text for _, text in shown])


def tick_text(value: float) -> str:
    """A round axis value as short text: 500, 2K, 10K, 1M."""
    for size, suffix in ((1e6, "M"), (1e3, "K")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


# The ticks a log axis may show, with their text: 1-2-3-5 steps from 0.1 to 5 x 10^8.
LOG_TICKS = [(t, tick_text(t)) for t in (step * 10**power for power in range(-1, 9) for step in (1, 2, 3, 5))]


class ContextCells(NamedTuple):
    """One context's valued decode cells, by concurrency, as the decode and latency charts plot them."""

    name: str
    cells: list[DecodeCell]
    totals: list[float]  # each cell's total tok/s, rounded (r1)


def rows_by_context(bundle: Bundle) -> list[ContextCells]:
    """Valued decode cells grouped by context label, shortest context first."""
    groups: dict[int, list[DecodeCell]] = {}
    for cell in valued_cells(bundle):
        groups.setdefault(cell.context_tokens, []).append(cell)
    return [ContextCells(context_label(context), cells, [r1(c.total_tok_s) for c in cells]) for context, cells in groups.items()]


def prefill_figure(bundle: Bundle) -> Figure:
    """Prompt tok/s by context length, one point per prefill context with a value."""
    points = sorted((p for p in bundle.prefill if prefill_has_value(p)), key=lambda p: p.context_tokens)
    trace = {
        "type": "scatter",
        "mode": "lines+markers",
        "name": "prefill",
        "x": [context_label(p.context_tokens) for p in points],
        "y": [r1(p.prompt_tok_s) for p in points],
        "customdata": [round(p.ttft_ms) if p.ttft_ms is not None else None for p in points],
        "hovertemplate": "%{x}: %{y:,.0f} tok/s<br>%{customdata:,} ms TTFT<extra></extra>",
    }
    return figure([trace], axis("context", type="category"), axis("prompt tok/s", rangemode="tozero"), legend=False)


def decode_figure(rows: list[ContextCells]) -> Figure:
    """Total decode tok/s against simultaneous requests, a line per context length."""
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": name,
            "x": [c.concurrency for c in cells],
            "y": totals,
            "hovertemplate": name + " × %{x}: %{y:,.1f} tok/s<extra></extra>",
        }
        for name, cells, totals in rows
    ]
    levels = sorted({c.concurrency for row in rows for c in row.cells})
    return figure(data, log2_axis("simultaneous requests", levels), axis("total tok/s", rangemode="tozero"))


def latency_figure(rows: list[ContextCells]) -> Figure:
    """Per-request tok/s against total tok/s, a line per context.

    Total tok/s is on a log axis, where each doubling of requests moves a point about as far;
    only the shortest context's points carry their concurrency as a label, lest labels pile up.
    """
    data = []
    for index, (name, cells, totals) in enumerate(rows):
        known = [(c, total) for c, total in zip(cells, totals) if c.per_request_tok_s is not None]
        data.append({
            "type": "scatter",
            "mode": "lines+markers+text" if index == 0 else "lines+markers",
            "name": name,
            "x": [total for _, total in known],
            "y": [r1(c.per_request_tok_s) for c, _ in known],
            "text": [str(c.concurrency) for c, _ in known],
            "textposition": "top center",
            "hovertemplate": name + " × %{text}: %{x:,.1f} total, %{y:,.1f} per request tok/s<extra></extra>",
        })
    totals = [x for trace in data for x in trace["x"]]
    return figure(data, log_axis("total tok/s", totals), axis("per request tok/s", rangemode="tozero"))


def run_figures(bundle: Bundle) -> dict[str, Figure]:
    """A run page's three charts, keyed by a stable name for element ids."""
    rows = rows_by_context(bundle)
    return {"prefill": prefill_figure(bundle), "decode": decode_figure(rows), "latency": latency_figure(rows)}


class CellPoint(NamedTuple):
    """A decode cell placed as on the index chart, before its hover text is made."""

    x: float
    y: float
    cell: DecodeCell


def cell_points(bundle: Bundle) -> list[CellPoint]:
    """A run's decode cells as (per-user tok/s, tok/s per GPU); cells lacking either are left out."""
    points = []
    gpus = output_gpus(bundle)
    for cell in valued_cells(bundle):
        y = per_gpu(cell.total_tok_s, gpus)
        if y is not None and cell.per_request_tok_s is not None:
            points.append(CellPoint(r1(cell.per_request_tok_s), r1(y), cell))
    return points


def labelled(point: CellPoint) -> Point:
    """An index chart point, its hover text naming the cell ("8K × 64")."""
    return Point(point.x, point.y, cell_label(point.cell.context_tokens, point.cell.concurrency))


def run_points(bundle: Bundle) -> list[Point]:
    """A run's decode cells as index chart points."""
    return [labelled(p) for p in cell_points(bundle)]


def run_frontier(bundle: Bundle) -> list[Point]:
    """pareto_frontier(run_points(bundle)), naming only the frontier's few cells."""
    return [labelled(p) for p in pareto_frontier(cell_points(bundle))]


Placed = TypeVar("Placed", Point, CellPoint)
T = TypeVar("T")


def frontier_positions(points: list[Placed]) -> list[int]:
    """The positions of the points no other point beats on both axes, by rising x (so falling y); of
    equal points, the first. Two stable sorts of bare floats (by falling y, then by falling x) order
    the points as one sort by (x, y) pairs would, in a fraction of the time."""
    xs, ys = [p.x for p in points], [p.y for p in points]
    order = sorted(range(len(ys)), key=ys.__getitem__, reverse=True)
    order.sort(key=xs.__getitem__, reverse=True)
    frontier: list[int] = []
    best_y = float("-inf")
    for position in order:
        if ys[position] > best_y:
            frontier.append(position)
            best_y = ys[position]
    return frontier[::-1]


def pareto_frontier(points: list[Placed]) -> list[Placed]:
    """Points no other point beats on both axes, by rising x (so falling y)."""
    return [points[i] for i in frontier_positions(points)]


def scatter_trace(name: str, points: list[Point], **extra: Any) -> dict[str, Any]:
    """A scatter trace of index points with their hover text."""
    return {
        "type": "scatter",
        "name": name,
        "x": [p.x for p in points],
        "y": [p.y for p in points],
        "text": [p.text for p in points],
        "hovertemplate": INDEX_HOVER,
        **extra,
    }


def index_figure(bundles: list[Bundle]) -> Figure:
    """Tok/s per GPU against tok/s per user over every cell of a few runs (at most MAX_RUN_TRACES,
    so the legend stays readable), a trace per run, with the Pareto frontier as its own trace."""
    groups: dict[str, list[Point]] = {}
    everything: list[Point] = []
    for bundle in sorted(bundles, key=lambda b: b.id):
        name = label(title(bundle))
        points = [p._replace(text=f"{name}<br>{p.text}") for p in run_points(bundle)]
        if points:
            groups.setdefault(name, []).extend(points)
            everything += points
    data = [scatter_trace(name, points, mode="markers") for name, points in sorted(groups.items())]
    frontier = scatter_trace(
        "Pareto frontier", pareto_frontier(everything), mode="lines", line={"color": TEXT_GREY, "dash": "dot"}
    )
    return figure(
        data + [frontier],
        axis("tok/s per user", rangemode="tozero"),
        axis("tok/s per GPU", rangemode="tozero"),
    )


def frontier_figure(runs: list[tuple[str, str | None, list[Point]]]) -> Figure:
    """The index chart of a large site: a frontier line per GPU type, and the overall frontier.

    `runs` are (title, GPU, the run's own frontier points, as run_frontier gives them): the frontier
    of a GPU's runs is the frontier of their frontiers, so the chart's size grows with GPU types, not
    with runs or cells.
    """
    return fronts_figure({gpu: runs_frontier(group) for gpu, group in by_gpu_label(runs, [run[1] for run in runs]).items()})


def by_gpu_label(items: list[T], gpus: list[str | None]) -> dict[str, list[T]]:
    """The items grouped by the label of their GPU (`gpus`, in the same order), each label escaped once."""
    labels: dict[str | None, str] = {}
    groups: dict[str, list[T]] = {}
    for item, gpu in zip(items, gpus):
        if gpu not in labels:
            labels[gpu] = label(gpu or "unknown GPU")
        groups.setdefault(labels[gpu], []).append(item)
    return groups


def fronts_figure(fronts: dict[str, list[Point]]) -> Figure:
    """frontier_figure from each GPU type's frontier (runs_frontier of its runs), by GPU label."""
    ordered = dict(sorted(fronts.items()))
    data = [scatter_trace(gpu, points, mode="lines+markers") for gpu, points in ordered.items()]
    overall = pareto_frontier([p for points in ordered.values() for p in points])
    data.append(scatter_trace("Pareto frontier", overall, mode="lines", line={"color": TEXT_GREY, "dash": "dot"}))
    return figure(data, axis("tok/s per user", rangemode="tozero"), axis("tok/s per GPU", rangemode="tozero"))


SAMPLE_EVERY = 32  # runs_frontier: every 32nd run's points make the first frontier, which rules out most others


def runs_frontier(runs: list[tuple[str, str | None, list[Point]]]) -> list[Point]:
    """The frontier of the runs' frontiers (each by rising x, as pareto_frontier gives it), each point's
    hover text led by the title of its run.

    A GPU type's 10,000 points hold a frontier of a dozen, and sorting them all costs most of a
    large index: the frontier of a sample of the runs rules out each run whose best x and best y
    one of its points beats at once (as good on both, and not the same point), and only the points
    of the runs left are sorted. Each point of such a run is beaten too, so is never on the frontier,
    and the rest keep their order (of equal points the first stands): the frontier is that of all.
    Only the points on it are named, a title escaped for each of a dozen points rather than 10,000.
    """
    sample = pareto_frontier([point for _, _, points in runs[::SAMPLE_EVERY] for point in points])
    xs, ys = [p.x for p in sample], [p.y for p in sample]
    kept: list[Point] = []
    owners: list[str] = []
    for name, _, points in runs:
        if not points:
            continue
        x, y = points[-1].x, points[0].y  # a frontier rises in x, so falls in y: the run's best of each
        i = bisect_left(xs, x)  # the sample's first point at least as far right: the highest of those
        if i == len(xs) or ys[i] < y or (xs[i] == x and ys[i] == y):
            kept += points
            owners += repeat(name, len(points))
    return [Point(kept[i].x, kept[i].y, f"{label(owners[i])}<br>{kept[i].text}") for i in frontier_positions(kept)]


def figure_script_json(fig: Figure) -> str:
    """Compact JSON with sorted keys, safe inside <script type="application/json"> (no <, >, &, U+2028/9)."""
    return script_safe(compact_json(fig))


def script_safe(text: str) -> str:
    """JSON text made safe inside a script element: <, >, & and U+2028/9 as escapes."""
    for raw, escaped in _SCRIPT_ESCAPES:  # str.replace runs in C; translate with a dict is far slower
        text = text.replace(raw, escaped)
    return text


