"""Listings of a large site: sort orders the build computes, so a first sort draws from one small
file before any data chunk arrives, and the capacity ranking page's first screen as HTML, with a
reader's own targets ranking every run from chunks loaded on demand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from sitegen.content.loader import load_bundle
from sitegen.figures.capacity import check_target, ranked_run
from sitegen.views import capacity_view, index_view
from sitegen.views.capacity_view import ranking
from sitegen.views.index_view import RunRecord
from tests.builders import script_call, serve_folder, site_order
from tests.sample_site import build_large_site

RUNS = 17


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RUNS runs; listings show 4 rows and keep 5 runs a chunk, the ranking 4 and 5."""
    sizes = ((index_view, "FIRST_SCREEN", 4), (index_view, "CHUNK_RUNS", 5),
             (capacity_view, "RANKING_SCREEN", 4), (capacity_view, "RANKING_CHUNK", 5))
    return build_large_site(tmp_path_factory.mktemp("large"), RUNS, model=lambda i: f"{('alpha', 'Beta', 'gamma')[i % 3]}-{i}B",
                            speedup=lambda i: 1 + (i * 5 % 7) / 7, sizes=sizes)


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    yield from serve_folder(site)


def _runs(site: Path) -> list[dict]:
    return json.loads((site / "runs.json").read_text())


def _listed(site: Path) -> list[str]:
    """The models of the runs in the listing's own order: the data chunks', one after another."""
    chunks = sorted(site.glob("data/runs-*.js"), key=lambda p: int(p.stem.removeprefix("runs-")))
    return [r["model"] for chunk in chunks for r in script_call(chunk.read_text(), "speedMatrixRuns")[1]]


def _column(page, index: int) -> list[str]:
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    return page.eval_on_selector_all("#runs-table tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value'))")


def test_the_build_writes_each_columns_orders_with_their_first_screen(site: Path) -> None:
    positions, first = site_order(site, "peak-descending")
    runs = {r["id"]: r for r in _runs(site)}
    listed = [runs[r["id"]] for r in first]
    assert sorted(positions) == list(range(RUNS)) and len(first) == 4
    assert [r["peak_tok_s"] for r in listed] == sorted((r["peak_tok_s"] for r in runs.values()), reverse=True)[:4]
    assert all(msgspec.json.decode(json.dumps(r).encode(), type=RunRecord) for r in first)


@pytest.mark.browser
def test_a_first_sort_draws_from_its_order_alone_and_later_steps_use_every_run(page, site: Path, server: str) -> None:
    held: list[object] = []
    for pattern in ("**/data/runs-*.js", "**/data/positions-*.js"):  # neither the chunks nor the positions arrive yet
        page.route(pattern, lambda route: held.append(route))
    page.goto(server + "index.html")
    page.click("#runs-table thead th[data-key=peak] button")
    every = sorted((r["peak_tok_s"] for r in _runs(site)), reverse=True)
    assert [float(v) for v in _column(page, 8)] == every[:4], "the biggest of all runs, from the order's first screen alone"
    assert page.text_content("#runs-more") == f"Show 4 more of {RUNS}"
    for route in held:
        route.continue_()
    page.unroute("**/data/runs-*.js")
    page.unroute("**/data/positions-*.js")
    page.click("#runs-more")
    assert [float(v) for v in _column(page, 8)] == every[:8]
    page.click("#runs-table thead th[data-key=model] button")
    models = [r["model"] for r in sorted(_runs(site), key=lambda r: r["model"].casefold())]
    assert _column(page, 1) == models[:4] and page.console_errors == []


@pytest.mark.browser
def test_a_first_sort_loads_the_other_directions_order_so_a_second_click_needs_no_chunk(page, site: Path, server: str) -> None:
    held: list[object] = []
    page.route("**/data/runs-*.js", lambda route: held.append(route))  # a chunk asked for would never arrive
    page.goto(server + "index.html")
    with page.expect_request("**/data/sort-peak-ascending.js"):  # asked for before the second click
        page.click("#runs-table thead th[data-key=peak] button")
    page.wait_for_function("() => document.querySelectorAll('script[src$=\"sort-peak-ascending.js\"]').length === 1")
    page.click("#runs-table thead th[data-key=peak] button")
    every = sorted(r["peak_tok_s"] for r in _runs(site))
    assert [float(v) for v in _column(page, 8)] == every[:4], "the smallest of all runs, with no chunk loaded"
    assert held == [] and page.console_errors == [], "neither click asks for a chunk"


@pytest.mark.browser
def test_a_sort_chosen_while_the_chunks_load_orders_them_once_they_arrive(page, site: Path, server: str) -> None:
    held: list[object] = []
    page.route("**/data/runs-*.js", lambda route: held.append(route))
    page.goto(server + "index.html")
    page.click("#runs-more")  # asks for the chunks, which do not arrive yet
    page.click("#runs-table thead th[data-key=peak] button")
    every = sorted((r["peak_tok_s"] for r in _runs(site)), reverse=True)
    page.wait_for_function("() => document.querySelectorAll('#runs-table tbody tr').length === 4")
    for route in held:
        route.continue_()
    page.unroute("**/data/runs-*.js")
    page.wait_for_function("() => window.speedMatrixData.load.records !== undefined")
    assert [float(v) for v in _column(page, 8)] == every[:4], "the rows the chunks brought, in the chosen order"
    assert page.get_attribute("#runs-table thead th[data-key=peak]", "aria-sort") == "descending"


@pytest.mark.browser
def test_a_model_pages_sort_loads_its_chunks_when_a_pointer_reaches_the_headers(page, site: Path, server: str) -> None:
    asked: list[str] = []
    page.on("request", lambda r: "/data/" in r.url and asked.append(r.url.rsplit("/", 1)[1]))
    page.goto(server + "models/beta-1b/index.html")
    page.hover("#runs-table thead th[data-key=peak]")
    page.wait_for_function("() => window.speedMatrixData.load.records !== undefined")
    assert {name for name in asked if name.startswith("runs-")} == {f"runs-{i}.js" for i in range(4)}


@pytest.mark.browser
def test_an_order_that_does_not_load_leaves_the_listing_in_its_own_order(page, site: Path, server: str) -> None:
    page.route("**/data/sort-peak-*.js", lambda route: route.abort())
    page.goto(server + "index.html")
    listed = _listed(site)
    assert _column(page, 1) == listed[:4]
    page.click("#runs-table thead th[data-key=peak] button")
    assert _column(page, 1) == listed[:4] and page.text_content("#runs-more") == f"Show 4 more of {RUNS}"


@pytest.mark.browser
def test_positions_that_do_not_load_leave_the_whole_set_in_the_listings_order(page, site: Path, server: str) -> None:
    page.route("**/data/positions-*.js", lambda route: route.abort())
    page.goto(server + "index.html")
    page.hover("#runs-more")  # the chunks load: a sort now orders the whole set
    page.wait_for_function("() => window.speedMatrixData.load.records !== undefined")
    page.click("#runs-table thead th[data-key=peak] button")
    assert _column(page, 1) == _listed(site)[:4]
    page.click("#runs-more")
    assert _column(page, 1) == _listed(site)[:8]


def _bundles(site: Path) -> list:
    """The site's runs, as the build read them (its bundle.json copies)."""
    return [load_bundle(p) for p in sorted(site.glob("runs/*/bundle.json"))]


def test_the_ranking_page_renders_one_screen_and_keeps_the_runs_in_chunks(site: Path) -> None:
    html = (site / "capacity" / "index.html").read_text()
    assert html.count("<tr data-id=") == 4 and f"The first 4 of {RUNS} runs." in html
    assert "speedMatrixRanking" not in html and 'id="ranking-data"' not in html
    chunks = sorted(p.name for p in (site / "capacity").glob("runs-*.js"))
    assert chunks == ["runs-0.js", "runs-1.js", "runs-2.js", "runs-3.js"]
    assert 'data-chunks="runs-0.js runs-1.js runs-2.js runs-3.js"' in html.replace("../capacity/", "")


@pytest.mark.browser
def test_a_readers_target_ranks_every_run_from_the_chunks(page, site: Path, server: str) -> None:
    asked: list[str] = []
    page.on("request", lambda r: "/capacity/runs-" in r.url and asked.append(r.url.rsplit("/", 1)[1]))
    page.goto(server + "capacity/index.html")
    assert asked == [], "the first screen needs no data"
    page.fill("#ranking-form [name=ttft_ms]", "2000")
    page.fill("#ranking-form [name=min_tok_s_per_user]", "10")
    page.dispatch_event("#ranking-form [name=min_tok_s_per_user]", "input")
    context = int(page.input_value("#ranking-form [name=context]"))
    want = [r.id for r in ranking([ranked_run(b) for b in _bundles(site)], context, check_target(2000, 10, None))][:4]
    page.wait_for_function("want => Array.from(document.querySelectorAll('#ranking-table tbody tr')).map(r => r.getAttribute('data-id')).join() === want",
                           arg=",".join(want))
    assert sorted(asked) == ["runs-0.js", "runs-1.js", "runs-2.js", "runs-3.js"] and page.console_errors == []
