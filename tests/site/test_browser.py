"""The published site in a real chromium over real HTTP: sorting, filters, charts, the compare
picker, and no request ever leaving the site."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.bundle.formats import context_label
from runner.bundle.schema import decode_bundle
from sitegen.build import build_site
from tests.builders import block_offsite, serve_folder
from tests.sample_site import MIMO, build_large_site, sample_document, write_content

pytestmark = pytest.mark.browser


def _column(page, index: int) -> list[str]:
    """One column's sort values, once the listing has drawn what was asked (it may load its data first)."""
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    return page.eval_on_selector_all(
        "#runs-table tbody tr:not([hidden])", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value'))"
    )


def test_index_sorts_by_any_column_and_filters(page, site_server: str) -> None:
    outside = block_offsite(page, site_server)
    page.goto(site_server + "index.html")
    dates = _column(page, 5)
    dated = [d for d in dates if d]
    assert dated == sorted(dated, reverse=True) and dates == dated + [""], "newest first, undated last"
    page.click("#runs-table thead th[data-key=peak] button")
    peaks = [float(v) for v in _column(page, 8)]
    assert peaks == sorted(peaks, reverse=True) and len(peaks) == 3, "numbers start biggest first"
    page.click("#runs-table thead th[data-key=peak] button")
    assert [float(v) for v in _column(page, 8)] == sorted(peaks)
    for _ in range(2):
        page.click("#runs-table thead th[data-key=date] button")
        assert _column(page, 5)[-1] == "", "a run without the figure goes last either way"
    page.click("#runs-table thead th[data-key=model]", position={"x": 3, "y": 3})  # the cell, off the button
    models = _column(page, 1)
    assert models == sorted(models, key=str.lower)
    assert page.get_attribute("#runs-table thead th[data-key=model]", "aria-sort") == "ascending"
    page.select_option("#filters select[name=gpu]", "H200 NVL")
    assert len(_column(page, 1)) == 2 and page.text_content("#runs-shown") == "Showing 2 of 3 runs"
    page.select_option("#filters select[name=model]", "Ling-3.0-flash-fp4")
    assert _column(page, 1) == ["Ling-3.0-flash-fp4"]
    page.select_option("#filters select[name=gpu]", "")
    page.select_option("#filters select[name=model]", "")
    assert len(_column(page, 1)) == 3 and page.text_content("#runs-shown") == ""
    assert outside == [] and page.console_errors == []


def test_charts_render_on_run_and_index_pages(page, site_server: str) -> None:
    outside = block_offsite(page, site_server)
    page.goto(site_server + "index.html")
    page.wait_for_selector(".chart[data-figure=fig-frontier] svg.main-svg")
    page.click("#runs-table tbody a >> nth=0")
    page.wait_for_selector(".chart[data-run-chart=decode] svg.main-svg")
    assert page.locator(".chart svg.main-svg").count() >= 3
    assert page.locator("#matrix .chart").count() == 0
    assert outside == [] and page.console_errors == []


# Each drawn run chart as plotly holds it: its traces' names, points and labels, and the x axis' ticks.
DRAWN_RUN_CHARTS = """() => Object.fromEntries([...document.querySelectorAll('.chart[data-run-chart]')].map(el => [
  el.dataset.runChart,
  {types: el.data.map(t => t.type), traces: el.data.map(t => [t.name, t.x, t.y, t.text || null]), ticks: el.layout.xaxis.tickvals || null}]))"""


def test_run_charts_draw_every_cell_with_a_value_from_the_pages_own_data(page, site_server: str, built_site: Path) -> None:
    run_id = sorted(p.name for p in (built_site / "runs").iterdir())[0]
    bundle = decode_bundle((built_site / "runs" / run_id / "bundle.json").read_bytes())
    page.goto(site_server + f"runs/{run_id}/index.html")
    page.wait_for_function("() => [...document.querySelectorAll('.chart[data-run-chart]')].filter(c => c.querySelector('svg.main-svg')).length === 3")
    drawn = page.evaluate(DRAWN_RUN_CHARTS)
    valued = sorted((c for c in bundle.decode if c.status in ("Valid", "Requests queued") and c.total_tok_s is not None),
                    key=lambda c: (c.context_tokens, c.concurrency))
    contexts = sorted({c.context_tokens for c in valued})
    rows = [[c for c in valued if c.context_tokens == context] for context in contexts]
    names = [context_label(context) for context in contexts]
    assert drawn["decode"]["traces"] == [
        [name, [c.concurrency for c in row], [round(c.total_tok_s, 1) for c in row], None] for name, row in zip(names, rows)]
    assert drawn["decode"]["ticks"] == sorted({c.concurrency for c in valued})
    known = [[c for c in row if c.per_request_tok_s is not None] for row in rows]
    assert drawn["latency"]["traces"] == [
        [name, [round(c.total_tok_s, 1) for c in row], [round(c.per_request_tok_s, 1) for c in row], [str(c.concurrency) for c in row]]
        for name, row in zip(names, known)]
    totals = [c.total_tok_s for row in known for c in row]
    ticks = drawn["latency"]["ticks"]
    assert len(ticks) >= 3 and ticks == sorted(ticks) and all(min(totals) / 2.1 <= t <= max(totals) * 2.1 for t in ticks)
    points = sorted((p for p in bundle.prefill if p.status in ("Valid", "Requests queued")), key=lambda p: p.context_tokens)
    assert drawn["prefill"]["traces"] == [["prefill", [context_label(p.context_tokens) for p in points],
                                           [round(p.prompt_tok_s, 1) for p in points], None]]
    assert {t for chart in drawn.values() for t in chart["types"]} == {"scatter"}, "plotly-basic draws scatter"
    assert page.console_errors == []


def test_compare_picker_keeps_its_choice_in_the_url(page, site_server: str) -> None:
    outside = block_offsite(page, site_server)
    page.goto(site_server + "index.html")
    button = page.locator("#compare-selected")
    boxes = page.locator("#runs-table input[name=compare]")
    boxes.nth(0).check()
    assert button.is_disabled()
    boxes.nth(1).check()
    assert button.is_enabled()
    chosen = [boxes.nth(0).get_attribute("value"), boxes.nth(1).get_attribute("value")]
    button.click()
    page.wait_for_selector(".compared-run")
    assert page.url.endswith("#runs=" + ",".join(chosen))
    titles = page.eval_on_selector_all(".compared-run h2 a", "links => links.map(a => a.getAttribute('href'))")
    assert [t.split("/")[-2] for t in titles] == chosen
    assert page.locator("table.ratio td").count() > 0
    shared = page.url
    page.goto(site_server + "about/index.html")
    page.goto(shared)
    page.wait_for_selector(".compared-run")
    assert page.locator(".compared-run").count() == 2
    assert outside == [] and page.console_errors == []


def test_build_time_comparison_and_content_pages(page, site_server: str) -> None:
    outside = block_offsite(page, site_server)
    page.goto(site_server + "index.html")
    page.click("nav >> text=Methodology")
    page.wait_for_url("**/methodology/index.html")  # loaded: a click does not wait for the page it opens
    assert page.locator("article.prose h2").count() > 3
    page.goto(site_server + "index.html")
    page.click("#runs-table tbody a >> text=MiMo-V2.6-Flash-RL")
    page.click("a[href*='/compare/'][href*='-vs-']")
    page.wait_for_url("**/compare/**")
    assert page.locator("table.ratio td").count() > 0
    assert "What differs" in page.inner_text("main")
    assert outside == [] and page.console_errors == []


def test_pages_work_without_javascript(browser, site_server: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site_server + "index.html")
    assert page.locator("#runs-table tbody tr").count() == 3
    page.click("#runs-table tbody a >> nth=0")
    assert "Sustained decode" in page.inner_text("#matrix")
    context.close()


def test_picker_page_lets_a_reader_add_runs_and_ignores_duplicates(page, site_server: str) -> None:
    outside = block_offsite(page, site_server)
    page.goto(site_server + "index.html")
    first = page.locator("#runs-table input[name=compare]").nth(0).get_attribute("value")
    page.goto(site_server + f"compare/index.html#runs={first},{first}")
    page.wait_for_selector("#picker-form[aria-busy=false]")
    assert page.locator(".compared-run").count() == 0
    assert "Choose at least two different runs" in page.inner_text("#picker")
    assert page.locator("#picker-compare").is_disabled()
    boxes = page.locator("#picker-form input[name=run]")
    assert page.locator(f"#picker-form input[value='{first}']").is_checked()
    other = next(v for v in (boxes.nth(i).get_attribute("value") for i in range(boxes.count())) if v != first)
    page.check(f"#picker-form input[value='{other}']")
    page.click("#picker-compare")
    page.wait_for_selector(".compared-run")
    assert page.url.endswith(f"#runs={first},{other}")
    assert page.locator(".compared-run").count() == 2
    assert page.locator("table.ratio tbody tr").count() > 0
    assert outside == [] and page.console_errors == []


def test_picker_says_when_two_runs_share_no_cell_and_when_too_many_are_chosen(page, tmp_path) -> None:
    content = write_content(tmp_path)
    bundle = sample_document(MIMO)
    bundle.update(id="mimo-elsewhere")
    for cell in bundle["decode"]:
        cell["concurrency"] *= 256  # concurrencies no other run measured
    (content / "runs" / "mimo-elsewhere.json").write_text(json.dumps(bundle))
    bundle.update(id="mimo-elsewhere-again")
    (content / "runs" / "mimo-elsewhere-again.json").write_text(json.dumps(bundle))  # five runs in all
    build_site(content, tmp_path / "site")
    served = serve_folder(tmp_path / "site")
    base = next(served)
    try:
        outside = block_offsite(page, base)
        page.goto(base + f"compare/index.html#runs={MIMO},mimo-elsewhere")
        page.wait_for_selector(".compared-run")
        assert "No cell has a value in both runs" in page.inner_text("#picker")
        assert page.locator("table.ratio").count() == 0
        page.wait_for_selector("#picker-form[aria-busy=false]")
        for box in page.locator("#picker-form input[name=run]").all():
            box.check()
        assert page.locator("#picker-compare").is_disabled()
        assert page.text_content("#picker-hint") == "5 chosen: a comparison takes at most 4 runs"
        assert outside == [] and page.console_errors == []
    finally:
        served.close()


# A site of 23 runs whose listings show 5 rows as HTML and keep 4 runs per data chunk, so the
# chunked loading, the search and the sort over the whole set are exercised with a small build.
LARGE_RUNS = 23
GPUS = ("H200 NVL", "B200", "MI300X")


@pytest.fixture(scope="module")
def large_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sitegen.views import index_view

    return build_large_site(tmp_path_factory.mktemp("large"), LARGE_RUNS, model=lambda i: f"{('Alpha', 'Beta', 'Gamma')[i % 3]}-{i // 3}B", speedup=lambda i: 1 + i / 7,
                            gpu=lambda i: GPUS[i // 2 % len(GPUS)],
                            sizes=((index_view, "FIRST_SCREEN", 5), (index_view, "CHUNK_RUNS", 4)))


@pytest.fixture(scope="module")
def large_server(large_site: Path) -> Iterator[str]:
    yield from serve_folder(large_site)


def _runs(site: Path) -> list[dict]:
    return json.loads((site / "runs.json").read_text())


def _chunk_requests(page) -> list[str]:
    """Record the data chunks the page asks for."""
    asked: list[str] = []
    page.on("request", lambda r: "/data/runs-" in r.url and asked.append(r.url.rsplit("/", 1)[1]))
    return asked


def test_a_large_index_shows_its_first_screen_and_sorts_every_run_loading_the_chunks_for_more(page, large_site: Path, large_server: str) -> None:
    outside = block_offsite(page, large_server)
    asked = _chunk_requests(page)
    page.goto(large_server + "index.html")
    assert page.locator("#runs-table tbody tr").count() == 5 and asked == [], "the first screen needs no data"
    page.click("#runs-table thead th[data-key=peak] button")
    peaks = [float(v) for v in _column(page, 8)]
    every = sorted((r["peak_tok_s"] for r in _runs(large_site)), reverse=True)
    assert peaks == every[:5], "the biggest of all 23 runs, not of the 5 first shown"
    page.wait_for_function("() => document.querySelector('script[src$=\"sort-peak-ascending.js\"]') !== null")
    assert asked == [], "a sort needs no chunk"
    page.click("#runs-more")
    assert [float(v) for v in _column(page, 8)] == every[:10]
    assert sorted(asked) == [f"runs-{i}.js" for i in range(6)]
    page.click("#runs-table thead th[data-key=peak] button")
    assert [float(v) for v in _column(page, 8)] == sorted(every)[:5], "a new order starts again at one screen"
    assert page.text_content("#runs-more") == f"Show 5 more of {LARGE_RUNS}"
    assert outside == [] and page.console_errors == []


@pytest.mark.parametrize("approach", ["hover", "focus"])
def test_pointing_at_or_tabbing_to_show_more_loads_the_chunks_and_draws_nothing_until_asked(page, large_server: str, approach: str) -> None:
    asked = _chunk_requests(page)
    page.goto(large_server + "index.html")
    first = _column(page, 1)
    page.hover("#runs-table thead th[data-key=model]")
    page.wait_for_timeout(200)
    assert page.locator("script[src*='data/runs-']").count() == 0 and asked == [], "pointing at a header loads nothing: a sort needs no chunk"
    getattr(page, approach)("#runs-more")
    page.wait_for_function("() => window.speedMatrixData && window.speedMatrixData.load.records !== undefined")
    assert sorted(asked) == [f"runs-{i}.js" for i in range(6)]
    assert _column(page, 1) == first and page.get_attribute("#runs-table", "aria-busy") is None


def test_search_finds_runs_by_model_gpu_and_engine_across_every_chunk(page, large_site: Path, large_server: str) -> None:
    outside = block_offsite(page, large_server)
    page.goto(large_server + "index.html")
    runs = _runs(large_site)
    page.fill("#runs-search", "b200")
    on_b200 = [r["model"] for r in runs if r["gpu"] == "B200"]
    assert set(_column(page, 2)) == {"B200"} and len(_column(page, 2)) == min(5, len(on_b200))
    assert page.text_content("#runs-shown") == f"Showing {len(on_b200)} of {LARGE_RUNS} runs"
    page.fill("#runs-search", "beta MI300X")
    both = sorted(r["model"] for r in runs if r["gpu"] == "MI300X" and r["model"].startswith("Beta"))
    assert sorted(_column(page, 1)) == both and 0 < len(both) <= 5
    page.fill("#runs-search", "VLLM")
    assert page.text_content("#runs-shown") == "", "every run's engine is vllm"
    page.fill("#runs-search", "no such run")
    assert _column(page, 1) == [] and page.text_content("#runs-shown") == f"Showing 0 of {LARGE_RUNS} runs"
    page.fill("#runs-search", "")
    page.select_option("#filters select[name=gpu]", "MI300X")
    assert set(_column(page, 2)) == {"MI300X"}
    assert outside == [] and page.console_errors == []


def test_a_gpu_page_sorts_only_its_own_runs(page, large_site: Path, large_server: str) -> None:
    page.goto(large_server + "gpus/b200/index.html")
    page.click("#runs-table thead th[data-key=peak] button")
    page.click("#runs-more")
    on_b200 = sorted((r["peak_tok_s"] for r in _runs(large_site) if r["gpu"] == "B200"), reverse=True)
    assert [float(v) for v in _column(page, 8)] == on_b200
    assert page.is_hidden("#runs-more") and page.console_errors == []


def test_the_picker_finds_any_run_by_search_and_compares_it(page, large_site: Path, large_server: str) -> None:
    outside = block_offsite(page, large_server)
    page.goto(large_server + "compare/index.html")
    page.wait_for_selector("#picker-form[aria-busy=false]")
    page.fill("#picker-search", "gamma mi300x")
    titles = page.eval_on_selector_all("#picker-choices .choice-title", "spans => spans.map(s => s.textContent)")
    wanted = sorted(r["model"] for r in _runs(large_site) if r["gpu"] == "MI300X" and r["model"].startswith("Gamma"))
    assert sorted(titles) == wanted and len(wanted) >= 2
    boxes = page.locator("#picker-choices input[name=run]")
    chosen = [boxes.nth(0).get_attribute("value"), boxes.nth(1).get_attribute("value")]
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.fill("#picker-search", "alpha")
    assert page.locator("#picker-choices input:checked").count() == 2, "chosen runs stay listed whatever the search"
    page.click("#picker-compare")
    page.wait_for_selector(".compared-run")
    assert page.url.endswith("#runs=" + ",".join(chosen))
    assert page.locator(".compared-run").count() == 2
    assert outside == [] and page.console_errors == []


def test_chunks_load_from_file_urls(page, large_site: Path) -> None:
    page.goto((large_site / "index.html").as_uri())
    page.click("#runs-table thead th[data-key=peak] button")
    assert [float(v) for v in _column(page, 8)] == sorted((r["peak_tok_s"] for r in _runs(large_site)), reverse=True)[:5]
    page.goto((large_site / "compare" / "index.html").as_uri())
    page.wait_for_selector("#picker-form[aria-busy=false]")
    assert page.locator("#picker-choices input[name=run]").count() == LARGE_RUNS
    assert page.console_errors == []
