"""The published site in a real chromium over real HTTP: sorting, filters, charts, the compare
picker, and no request ever leaving the site."""

from __future__ import annotations

import json
import shutil
from urllib.parse import urlparse

import pytest

from sitegen.build import build_site
from tests.conftest import ROOT, serve_folder

pytestmark = pytest.mark.browser


def _guard(page, base: str) -> list[str]:
    """Abort and record every request to a host other than the site's."""
    outside: list[str] = []
    site_host = urlparse(base).netloc

    def route(r) -> None:
        if urlparse(r.request.url).netloc != site_host:
            outside.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    page.route("**/*", route)
    return outside


def _column(page, index: int) -> list[str]:
    """One column's sort values, once the listing has drawn what was asked (it may load its data first)."""
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    return page.eval_on_selector_all(
        "#runs-table tbody tr:not([hidden])", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value'))"
    )


def test_index_sorts_by_any_column_and_filters(page, site_server: str) -> None:
    outside = _guard(page, site_server)
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
    outside = _guard(page, site_server)
    page.goto(site_server + "index.html")
    page.wait_for_selector(".chart[data-figure=fig-frontier] svg.main-svg")
    page.click("#runs-table tbody a >> nth=0")
    page.wait_for_selector(".chart[data-figure=fig-decode] svg.main-svg")
    assert page.locator(".chart svg.main-svg").count() >= 3
    assert page.locator("#matrix .chart").count() == 0
    assert outside == [] and page.console_errors == []


def test_compare_picker_keeps_its_choice_in_the_url(page, site_server: str) -> None:
    outside = _guard(page, site_server)
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
    outside = _guard(page, site_server)
    page.goto(site_server + "index.html")
    page.click("nav >> text=Methodology")
    assert page.locator("article.prose h2").count() > 3
    page.goto(site_server + "index.html")
    page.click("#runs-table tbody a >> text=MiMo-V2.6-Flash-RL")
    page.click("a[href*='/compare/'][href*='-vs-']")
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
    outside = _guard(page, site_server)
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
    content = tmp_path / "content"
    shutil.copytree(ROOT / "content", content)
    bundle = json.loads((content / "runs" / "mimo-v2-6-flash-rl-h200-nvl-x2.json").read_text())
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
        outside = _guard(page, base)
        page.goto(base + "compare/index.html#runs=mimo-v2-6-flash-rl-h200-nvl-x2,mimo-elsewhere")
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
