"""Charts: plotly-valid, compact, deterministic dicts; a run page's chart data; the frontier; script-safe JSON."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import msgspec
import plotly
import plotly.graph_objects as go
import pytest

from sitegen.pages.render import DEFAULT_TEMPLATES
from sitegen.views.charts import (
    MAX_RUN_TRACES,
    Point,
    figure_script_json,
    frontier_figure,
    index_figure,
    label,
    pareto_frontier,
    run_chart_data,
    run_points,
    runs_frontier,
)
from sitegen.views.runview import title
from tests.builders import HOSTILE, make_bundle


def test_figures_are_valid_plotly_without_template_or_look() -> None:
    fig = index_figure([make_bundle()])
    go.Figure(data=fig["data"], layout=fig["layout"])  # raises on an invalid property
    assert set(fig) == {"data", "layout"}, "plotly's config is site.js's"
    assert set(fig["layout"]) == {"xaxis", "yaxis"}, "the shared look is site.js's, not each page's"


def test_run_charts_carry_only_cells_with_values() -> None:
    bundle = make_bundle()
    decode = run_chart_data(bundle)["decode"]
    plotted = sum(len(cells) for _, cells in decode)
    valued = sum(1 for c in bundle.decode if c.status in ("Valid", "Requests queued"))
    assert plotted == valued == 43
    rows = dict(decode)
    assert [name for name, _ in decode] == ["8K", "16K", "32K", "64K", "128K", "251K"]
    assert 16 not in [cell[0] for cell in rows["16K"]]  # Looped
    cell = next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == (8192, 4))
    assert [4, round(cell.total_tok_s, 1), round(cell.per_request_tok_s, 1)] in rows["8K"]


def test_run_charts_keep_a_cell_without_per_request_figure_for_the_decode_chart() -> None:
    bundle = make_bundle()
    first = bundle.decode[0]
    bundle = msgspec.structs.replace(bundle, decode=[msgspec.structs.replace(first, per_request_tok_s=None), *bundle.decode[1:]])
    rows = dict(run_chart_data(bundle)["decode"])
    assert rows["8K"][0] == [first.concurrency, round(first.total_tok_s, 1), None]


def test_run_charts_prefill_points_by_context_in_order() -> None:
    prefill = run_chart_data(make_bundle())["prefill"]
    assert [p[0] for p in prefill] == ["8K", "16K", "32K", "64K", "128K", "251K", "256K"]
    assert all(p[1] == round(p[1], 1) and isinstance(p[2], int) for p in prefill)


def test_run_page_chart_data_is_small() -> None:
    assert len(figure_script_json(run_chart_data(make_bundle()))) < 1_500


def test_output_is_byte_identical_across_calls() -> None:
    bundles = [make_bundle(), make_bundle("other", scale=1.5)]
    assert figure_script_json(index_figure(bundles)) == figure_script_json(index_figure(bundles[::-1]))
    assert figure_script_json(run_chart_data(bundles[0])) == figure_script_json(run_chart_data(make_bundle()))


def is_dominated(p: Point, points: list[Point]) -> bool:
    """Some other point is at least as good on both axes and better on one."""
    return any(q.x >= p.x and q.y >= p.y and (q.x, q.y) != (p.x, p.y) for q in points)


@pytest.mark.parametrize("seed", range(20))
def test_frontier_is_non_dominated_monotone_and_complete(seed: int) -> None:
    rng = random.Random(seed)
    points = [Point(rng.randint(1, 30) * 1.0, rng.randint(1, 30) * 1.0, str(i)) for i in range(40)]
    frontier = pareto_frontier(points)
    assert not any(is_dominated(p, points) for p in frontier)
    xs, ys = [p.x for p in frontier], [p.y for p in frontier]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    assert ys == sorted(ys, reverse=True) and len(set(ys)) == len(ys)
    # Every point off the frontier is dominated by something on it.
    coords = {(p.x, p.y) for p in frontier}
    assert all(is_dominated(p, frontier) for p in points if (p.x, p.y) not in coords)


def test_of_equal_points_the_frontier_keeps_the_first() -> None:
    points = [Point(1.0, 5.0, "a"), Point(2.0, 3.0, "b"), Point(2.0, 3.0, "c"), Point(2.0, 1.0, "d"), Point(1.0, 5.0, "e")]
    assert [p.text for p in pareto_frontier(points)] == ["a", "b"]


def test_index_figure_has_a_trace_per_run_and_the_frontier() -> None:
    bundles = [make_bundle("b-run", scale=1.5), make_bundle("a-run", gpu_count=1), make_bundle("c-run", gpu_count=None)]
    fig = index_figure(bundles)
    go.Figure(data=fig["data"], layout=fig["layout"])
    names = [t["name"] for t in fig["data"]]
    assert names == ["Ling-3.0-flash-fp4 on H200 NVL 141GB ×1", "Ling-3.0-flash-fp4 on H200 NVL 141GB ×2",
                     "Pareto frontier"]  # c-run has no GPU count, so no per-GPU figure
    runs = [p for t in fig["data"][:-1] for p in zip(t["x"], t["y"])]
    frontier = list(zip(fig["data"][-1]["x"], fig["data"][-1]["y"]))
    assert set(frontier) <= set(runs)
    assert not any(fx <= x and fy <= y and (x, y) != (fx, fy) for fx, fy in frontier for x, y in runs)


def test_run_points_divide_by_gpu_count() -> None:
    one, two = run_points(make_bundle(gpu_count=1)), run_points(make_bundle(gpu_count=2))
    assert [p.x for p in one] == [p.x for p in two]
    assert all(abs(a.y - 2 * b.y) <= 0.11 for a, b in zip(one, two))


def test_hostile_model_name_is_inert_in_script_json() -> None:
    text = figure_script_json(index_figure([make_bundle(model=HOSTILE)]))
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    decoded = json.loads(text)
    name = decoded["data"][0]["name"]
    # Plotly reads names as pseudo-HTML: tags arrive as entities, shown literally.
    assert "&lt;/script&gt;&lt;img" in name and "<" not in name


def test_script_json_escapes_and_round_trips() -> None:
    fig = {"b": "</script>\u2028&<!--", "a": [1.5, None]}
    text = figure_script_json(fig)
    assert text == '{"a":[1.5,null],"b":"\\u003c/script\\u003e\\u2028\\u0026\\u003c!--"}'
    assert json.loads(text) == fig


def _plotly_version(script: str) -> str:
    return re.search(r"plotly\.js (?:\(basic - minified\) )?v(\S+)", script[:300])[1]


def test_the_site_carries_the_basic_bundle_of_the_plotly_version_the_figures_are_checked_against() -> None:
    bundle = DEFAULT_TEMPLATES / "static" / "plotly-basic.min.js"
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert _plotly_version(bundle.read_text()) == _plotly_version(full.read_text())
    assert bundle.stat().st_size < full.stat().st_size / 3


def test_every_chart_uses_only_traces_the_basic_bundle_has() -> None:
    runs = [(f"run {i}", ("H200", "B200")[i % 2], pareto_frontier(run_points(make_bundle(run_id=f"run-{i}", scale=1 + i)))) for i in range(4)]
    figures = [index_figure([make_bundle()]), frontier_figure(runs)]
    assert {trace["type"] for fig in figures for trace in fig["data"]} == {"scatter"}


def test_frontier_figure_draws_a_frontier_per_gpu_and_over_all() -> None:
    gpus = ["H200 NVL", "H100 SXM", "B200"]
    bundles = [make_bundle(run_id=f"run-{i}", gpu=gpus[i % 3], scale=1 + i / 10) for i in range(MAX_RUN_TRACES + 1)]
    runs = [(title(b), b.hardware.gpu, pareto_frontier(run_points(b))) for b in bundles]
    fig = frontier_figure(runs)
    assert [trace["name"] for trace in fig["data"]] == sorted(gpus) + ["Pareto frontier"]
    for gpu, trace in zip(sorted(gpus), fig["data"]):
        everything = [p for b in bundles if b.hardware.gpu == gpu for p in run_points(b)]
        assert list(zip(trace["x"], trace["y"])) == [(p.x, p.y) for p in pareto_frontier(everything)]
    overall = pareto_frontier([p for b in bundles for p in run_points(b)])
    assert list(zip(fig["data"][-1]["x"], fig["data"][-1]["y"])) == [(p.x, p.y) for p in overall]


def test_frontier_figure_names_each_point_for_the_run_it_is_from() -> None:
    runs = [(f"run <{i}>", "H200" if i % 2 else None, [Point(float(i), 10.0 - i, f"8K × {i}")]) for i in range(6)]
    fig = frontier_figure(runs)
    assert [trace["name"] for trace in fig["data"]] == ["H200", "unknown GPU", "Pareto frontier"]
    assert fig["data"][0]["text"] == ["run &lt;1&gt;<br>8K × 1", "run &lt;3&gt;<br>8K × 3", "run &lt;5&gt;<br>8K × 5"]
    assert fig["data"][1]["text"] == ["run &lt;0&gt;<br>8K × 0", "run &lt;2&gt;<br>8K × 2", "run &lt;4&gt;<br>8K × 4"]


@pytest.mark.parametrize("seed", range(10))
def test_a_gpus_frontier_is_that_of_every_point_of_its_runs_though_a_sample_rules_most_runs_out(seed: int) -> None:
    rng = random.Random(seed)
    def run_frontier(i: int) -> list[Point]:  # coarse values: many equal points across runs
        return pareto_frontier([Point(rng.randint(1, 40) * 1.0, rng.randint(1, 40) * 1.0, f"cell {i}.{j}") for j in range(6)])
    runs = [(f"run <{i}>", "H200", run_frontier(i)) for i in range(300)]
    every = [Point(p.x, p.y, f"{label(name)}<br>{p.text}") for name, _, points in runs for p in points]
    assert runs_frontier(runs) == pareto_frontier(every)


def test_a_run_whose_slowest_point_is_beaten_still_brings_its_fastest_to_the_frontier() -> None:
    runs = [("a", "H200", [Point(1.0, 10.0, "a1"), Point(5.0, 5.0, "a2")]), ("b", "H200", [Point(0.5, 9.0, "b1"), Point(6.0, 1.0, "b2")])]
    assert [p.text for p in runs_frontier(runs)] == ["a<br>a1", "a<br>a2", "b<br>b2"]
