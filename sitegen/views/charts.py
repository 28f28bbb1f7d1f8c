"""Plotly figures for the listings and series pages, and what a run page's charts draw, as small
deterministic JSON-able data.

Figures are plain dicts (data and the axes) so that no plotly template or plotly.js ends up in a
page: the site carries plotly.js once, as plotly's basic partial bundle
(templates/static/plotly-basic.min.js: scatter, bar and pie, a quarter of the full bundle, the same
plotly.js version as the plotly package's), and site.js gives every chart the site's look. A run
page carries only the figures its three charts draw (run_chart_data), and site.js makes the charts
from them: the same in every run page, so in none of them. Every trace is a scatter. Charts add to
the tables and never replace them, so only cells with values are plotted.
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

TEXT_GREY = "#808080"  # the frontier's dotted line: the grey of the charts' text (site.js)
LABEL_LIMIT = 60
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
    """An axis with a title; site.js adds the gridlines every chart shares."""
    return {"title": {"text": title_text}, **extra}


def figure(data: list[dict[str, Any]], xaxis: dict[str, Any], yaxis: dict[str, Any]) -> Figure:
    """Traces and their axes. The look every chart shares (transparent backgrounds, colours, the legend
    below the plot, plotly's buttons) is site.js's, so that a page carries only its own figures."""
    return {"data": data, "layout": {"xaxis": xaxis, "yaxis": yaxis}}


def run_chart_data(bundle: Bundle) -> dict[str, list]:
    """What a run page's charts draw, kept short: site.js makes the three figures from it.

    `decode`: a row per context with a value (shortest first) of [concurrency, total tok/s, per-request
    tok/s or null] per valued cell; `prefill`: [context label, prompt tok/s, TTFT ms or null] per prefill
    point with a value, shortest context first. Figures are rounded as the charts show them.
    """
    rows: dict[int, list[list]] = {}
    for cell in valued_cells(bundle):
        per_request = r1(cell.per_request_tok_s) if cell.per_request_tok_s is not None else None
        rows.setdefault(cell.context_tokens, []).append([cell.concurrency, r1(cell.total_tok_s), per_request])
    points = sorted((p for p in bundle.prefill if prefill_has_value(p)), key=lambda p: p.context_tokens)
    return {
        "decode": [[context_label(context), cells] for context, cells in rows.items()],
        "prefill": [[context_label(p.context_tokens), r1(p.prompt_tok_s), round(p.ttft_ms) if p.ttft_ms is not None else None]
                    for p in points],
    }


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


