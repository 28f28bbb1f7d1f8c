"""WCAG 2.1 AA in a real chromium: axe-core finds no violation on any kind of page, at a desktop and a
phone width and in the dark scheme; the matrix reads at its deepest shade; a keyboard alone sorts, filters,
scrolls the wide tables and picks runs to compare, with the focus always in sight.

axe-core comes from npm at the version package-lock.json pins (`make install-test` puts it in
node_modules/); nothing is fetched while the tests run."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest

from runner.bundle.repeats import combine
from runner.bundle.schema import DecodeCell, encode_bundle
from sitegen.build import build_site
from tests.builders import ROOT, block_offsite, make_bundle, make_served_bundle, serve_folder

pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
COLOUR_RULES = ["color-contrast", "link-in-text-block"]

STATUSES = "ling-h200"  # every status but Distorted (tests.builders.cell_status)
SERVED = "qwen3-32b-disaggregated"  # served: topology, speculative decoding, energy, a Distorted cell
AGAIN = "qwen3-32b-disaggregated-again"  # a second served run: a comparison with their figures
REPEATED = "ling-h200-repeated"  # tail percentiles and repeats
INCONSISTENT = "ling-h200-inconsistent"  # the checker's mark, listing its problems


def _repeated(cell: DecodeCell) -> DecodeCell:
    """The cell measured three times, with tail percentiles in each repeat."""
    if cell.total_tok_s is None:
        return cell
    return combine([msgspec.structs.replace(cell, total_tok_s=cell.total_tok_s * f, ttft_p90_ms=cell.ttft_ms * 1.5,
                                            ttft_p99_ms=cell.ttft_ms * 2, tbt_p90_ms=cell.tbt_ms * 1.2, tbt_p99_ms=cell.tbt_ms * 1.4)
                    for f in (0.97, 1.0, 1.04)])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed runs and pages, a run with every status, two served runs, one with tails and repeats and
    one the checker finds inconsistent."""
    content = tmp_path_factory.mktemp("a11y") / "content"
    shutil.copytree(ROOT / "content", content)
    day = dt.datetime(2026, 9, 20, 9, 0, tzinfo=dt.timezone.utc)
    repeated = make_bundle(REPEATED, measured_at=day)
    repeated.decode = [_repeated(c) for c in repeated.decode]
    inconsistent = make_bundle(INCONSISTENT, scale=0.8)
    inconsistent.decode[3].per_request_tok_s = 36655.0
    for bundle in (make_bundle(STATUSES), make_served_bundle(SERVED), make_served_bundle(AGAIN, scale=1.1, measured_at=day), repeated,
                   inconsistent):
        (content / "runs" / f"{bundle.id}.json").write_bytes(encode_bundle(bundle))
    build_site(content, content.parent / "site")
    return content.parent / "site"


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    yield from serve_folder(site)


def _one(site: Path, pattern: str) -> str:
    """The one page of the site that matches a glob pattern, as a path from the site's root."""
    found = sorted(site.glob(pattern))
    assert found, f"the site has no page {pattern}"
    return str(found[0].relative_to(site))


# Every kind of page: its address (from the built site), and what it shows once its scripts are done.
PAGES: dict[str, tuple[Callable[[Path], str], str]] = {
    "index": (lambda s: "index.html", "#filters:not([hidden])"),
    "run-every-status": (lambda s: f"runs/{STATUSES}/index.html", "#capacity-form:not([hidden])"),
    "run-imported": (lambda s: "runs/mimo-v2-6-flash-rl-h200-nvl-x2/index.html", "#capacity-form:not([hidden])"),
    "run-served": (lambda s: f"runs/{SERVED}/index.html", "#energy"),
    "run-repeats": (lambda s: f"runs/{REPEATED}/index.html", "#tail"),
    "run-inconsistent": (lambda s: f"runs/{INCONSISTENT}/index.html", ".verification-problems li"),
    "comparison": (lambda s: _one(s, f"compare/{STATUSES}-vs-{REPEATED}.html"), "table.ratio"),
    "comparison-served": (lambda s: _one(s, f"compare/{SERVED}-vs-{AGAIN}.html"), "table.cell-figures"),
    "picker": (lambda s: "compare/index.html", "#picker-form[aria-busy=false]"),
    "picker-chosen": (lambda s: f"compare/index.html#runs={STATUSES},{SERVED},mimo-v2-6-flash-rl-h200-nvl-x2",
                      "#picker-form[aria-busy=false] ~ #picker .compared-run"),
    "capacity": (lambda s: "capacity/index.html", "#ranking-form:not([hidden])"),
    "model": (lambda s: "models/ling-3-0-flash-fp4/index.html", "#filters:not([hidden])"),
    "gpu": (lambda s: "gpus/h200-nvl/index.html", "#filters:not([hidden])"),
    "series": (lambda s: _one(s, "series/ling-*/index.html"), "table.series-runs"),
    "markdown": (lambda s: "about/index.html", "article.prose"),
    "methodology": (lambda s: "methodology/index.html", "article.prose table"),
}
VIEWS = {"1400": ({"width": 1400, "height": 1000}, "light"), "390": ({"width": 390, "height": 844}, "light"),
         "1400-dark": ({"width": 1400, "height": 1000}, "dark")}

# Every chart drawn, and the drawing hidden behind its text alternative.
CHARTS_DRAWN = "() => [...document.querySelectorAll('.chart')].every(c => c.querySelector('svg.main-svg[aria-hidden=true]'))"


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed in {AXE.parent.parent}: run make install-test (npm ci)")
    return AXE.read_text(encoding="utf-8")


def _open(browser, server: str, site: Path, name: str, view: str):
    """A fresh page at the view's size and scheme, showing the page `name` with its scripts done."""
    size, scheme = VIEWS[view]
    context = browser.new_context(viewport=size, color_scheme=scheme)
    page = context.new_page()
    page.console_errors = []
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    page.outside = block_offsite(page, server)
    address, ready = PAGES[name]
    page.goto(server + address(site))
    page.wait_for_selector(ready, state="attached")
    page.wait_for_function(CHARTS_DRAWN)
    return page


@pytest.fixture(scope="module")
def shown(browser, server: str, site: Path) -> Iterator[Callable[[str, str], object]]:
    """show(name, view): the page `name` at the view's size and scheme. A page is loaded once and kept
    for its next views (resized, its scheme switched), as the tests take each page's views in turn."""
    context = browser.new_context()
    kept: dict[str, object] = {}

    def show(name: str, view: str):
        size, scheme = VIEWS[view]
        if name not in kept:
            for page in kept.values():
                page.close()
            kept.clear()
            page = context.new_page()
            page.console_errors = []
            page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
            page.outside = block_offsite(page, server)
            page.set_viewport_size(size)
            page.emulate_media(color_scheme=scheme)
            address, ready = PAGES[name]
            page.goto(server + address(site))
            page.wait_for_selector(ready, state="attached")
            page.wait_for_function(CHARTS_DRAWN)
            kept[name] = page
        page = kept[name]
        page.set_viewport_size(size)
        page.emulate_media(color_scheme=scheme)
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")  # laid out anew
        return page

    yield show
    context.close()


def _axe(page, axe_source: str, options: dict, within: str | None = None) -> list[dict]:
    """axe-core's violations on the page (or within the elements a selector matches)."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=axe_source)
    return page.evaluate("([within, options]) => axe.run(within || document, options).then(r => r.violations)", [within, options])


def _report(violations: list[dict]) -> str:
    """Each violation: rule, impact and what it asks, then the elements it found (their selectors)."""
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}, {len(v['nodes'])} elements): {v['help']}")
        for node in v["nodes"][:12]:
            why = (node.get("failureSummary") or "").splitlines()
            lines.append(f"    {' > '.join(map(str, node['target']))}" + (f"  [{why[1].strip()}]" if len(why) > 1 else ""))
        if len(v["nodes"]) > 12:
            lines.append(f"    … and {len(v['nodes']) - 12} more")
    return "\n".join(lines)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", PAGES)
def test_no_axe_violations(shown, axe_source: str, name: str, view: str) -> None:
    page = shown(name, view)
    # In the dark scheme only what colours decide can differ from the light one at the same width.
    rules = {"type": "rule", "values": COLOUR_RULES} if VIEWS[view][1] == "dark" else {"type": "tag", "values": TAGS}
    violations = _axe(page, axe_source, {"runOnly": rules, "resultTypes": ["violations"]})
    assert not violations, f"{name} at {view}: {sum(len(v['nodes']) for v in violations)} violations\n" + _report(violations)
    assert page.outside == [] and page.console_errors == []


@pytest.mark.parametrize("view", ["1400", "1400-dark"])
def test_every_shade_of_the_matrix_reads(browser, server: str, site: Path, axe_source: str, view: str) -> None:
    """Each valued cell (Valid, Requests queued, Distorted) at the deepest shade (and halfway there), whatever its own figure."""
    for name in ("run-every-status", "run-served", "picker-chosen"):
        page = _open(browser, server, site, name, view)
        try:
            assert page.locator("table.matrix td:has(.value)").count() > 0
            for heat in (0.5, 1):  # text is darker than the light scheme's shade, lighter than the dark one's: 1 is the worst
                page.eval_on_selector_all("table.matrix td:has(.value)", "(cells, heat) => cells.forEach(c => c.style.setProperty('--heat', heat))", heat)
                violations = _axe(page, axe_source, {"runOnly": {"type": "rule", "values": ["color-contrast"]}, "resultTypes": ["violations"]},
                                  within="table.matrix")
                assert not violations, f"{name} at {view}, every cell at heat {heat}:\n" + _report(violations)
        finally:
            page.context.close()


# --- The keyboard alone ----------------------------------------------------------------------------

def _tab_to(page, selector: str, backwards: bool = False, limit: int = 80) -> None:
    """Press Tab (Shift+Tab) until the focus is on an element that matches `selector`, and check it shows."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)", selector):
            _assert_focus_visible(page)
            return
    pytest.fail(f"{limit} presses of Tab never reached {selector}")


FOCUS = """() => { const e = document.activeElement, s = getComputedStyle(e), box = e.getBoundingClientRect();
    let opacity = 1; for (let n = e; n; n = n.parentElement) opacity *= Number(getComputedStyle(n).opacity);
    return {what: e.outerHTML.slice(0, 120), outline: s.outlineStyle, width: parseFloat(s.outlineWidth), opacity, size: box.width * box.height}; }"""


def _assert_focus_visible(page) -> None:
    """The focused element is drawn with an outline of 2 px or more, and shown (once a fade-in has run)."""
    for _ in range(20):
        focus = page.evaluate(FOCUS)
        if focus["opacity"] == 1:
            break
        page.wait_for_timeout(50)
    assert focus["outline"] != "none" and focus["width"] >= 2, f"no visible focus style on {focus['what']}"
    assert focus["opacity"] == 1 and focus["size"] > 0, f"the focus is on something not shown: {focus}"


def _peaks(page) -> list[float]:
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    return [float(v) for v in page.eval_on_selector_all("#runs-table tbody tr:not([hidden])",
                                                         "rows => rows.map(r => r.querySelector('td[data-value]:nth-child(9)').getAttribute('data-value'))")]


def test_a_keyboard_sorts_the_listing_and_the_header_says_its_order(page, server: str) -> None:
    outside = block_offsite(page, server)
    page.goto(server + "index.html")
    header = "#runs-table thead th[data-key=peak]"
    date = "#runs-table thead th[data-key=date]"
    assert page.get_attribute(date, "aria-sort") == "descending", "the listing opens newest first, and says so"
    assert page.get_attribute(header, "aria-sort") == "none"
    _tab_to(page, f"{header} button")
    page.keyboard.press("Enter")
    assert page.get_attribute(header, "aria-sort") == "descending"
    assert page.get_attribute(date, "aria-sort") == "none"
    peaks = _peaks(page)
    assert peaks == sorted(peaks, reverse=True) and len(peaks) > 3
    page.keyboard.press("Space")
    assert page.get_attribute(header, "aria-sort") == "ascending"
    assert _peaks(page) == sorted(peaks)
    _tab_to(page, "#runs-table thead th[data-key=model] button")
    page.keyboard.press("Enter")
    assert page.get_attribute("#runs-table thead th[data-key=model]", "aria-sort") == "ascending"
    assert page.get_attribute(header, "aria-sort") == "none", "one column sorts at a time"
    assert outside == [] and page.console_errors == []


def test_a_keyboard_filters_the_listing(page, server: str) -> None:
    outside = block_offsite(page, server)
    page.goto(server + "index.html")
    total = page.locator("#runs-table tbody tr").count()
    _tab_to(page, "#filters select[name=gpu]")
    page.keyboard.type("H200 SXM")  # a closed select picks the option its typed letters start
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    shown = page.eval_on_selector_all("#runs-table tbody tr", "rows => rows.map(r => r.dataset.id)")
    assert 0 < len(shown) < total and page.text_content("#runs-shown") == f"Showing {len(shown)} of {total} runs"
    _tab_to(page, "#runs-search", backwards=True)
    page.keyboard.type("qwen")
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    assert page.eval_on_selector_all("#runs-table tbody tr", "rows => rows.map(r => r.dataset.id)") == [AGAIN, SERVED]
    assert outside == [] and page.console_errors == []


def test_a_keyboard_picks_runs_to_compare_from_the_listing_and_the_picker(page, server: str) -> None:
    outside = block_offsite(page, server)
    page.goto(server + "index.html")
    chosen = []
    for _ in range(2):
        _tab_to(page, "#runs-table input[name=compare]:not(:checked)")
        chosen.append(page.evaluate("() => document.activeElement.value"))
        page.keyboard.press("Space")
    assert page.is_enabled("#compare-selected")
    _tab_to(page, "#compare-selected", backwards=True)
    page.keyboard.press("Enter")
    page.wait_for_selector(".compared-run")
    assert page.url.endswith("#runs=" + ",".join(chosen)) and page.locator(".compared-run").count() == 2

    page.goto("about:blank")  # a new document: the picker reads the address once
    page.goto(server + f"compare/index.html#runs={STATUSES}")
    page.wait_for_selector("#picker-form[aria-busy=false]")
    _tab_to(page, "#picker-search")
    page.keyboard.type("qwen")
    _tab_to(page, f"#picker-choices input[value={SERVED}]")
    page.keyboard.press("Space")
    _tab_to(page, "#picker-compare")
    page.keyboard.press("Enter")
    page.wait_for_selector(".compared-run")
    assert page.url.endswith(f"#runs={STATUSES},{SERVED}") and page.locator(".compared-run").count() == 2
    assert outside == [] and page.console_errors == []


def test_a_keyboard_scrolls_a_wide_table_on_a_phone(browser, server: str, site: Path) -> None:
    page = _open(browser, server, site, "run-every-status", "390")
    try:
        region = "#decode .table-scroll"
        assert page.eval_on_selector(region, "e => e.scrollWidth > e.clientWidth"), "the matrix is wider than a phone"
        _tab_to(page, region)
        assert page.get_attribute(region, "role") == "region" and page.get_attribute(region, "aria-label")
        page.keyboard.press("End")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("s => document.querySelector(s).scrollLeft > 0", arg=region)
    finally:
        page.context.close()


@pytest.mark.parametrize("name", ["index", "run-served", "capacity"])
def test_every_stop_of_the_tab_order_shows_the_focus(browser, server: str, site: Path, name: str) -> None:
    page = _open(browser, server, site, name, "1400")
    try:
        stops = page.evaluate("() => document.querySelectorAll('a[href], button:not([disabled]), input, select, [tabindex]').length")
        seen = set()
        for _ in range(stops + 2):
            page.keyboard.press("Tab")
            what = page.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
            if what in seen or what.startswith("<body"):
                continue
            seen.add(what)
            _assert_focus_visible(page)
        assert len(seen) > 5
    finally:
        page.context.close()


def test_charts_name_the_figures_they_draw(page, server: str) -> None:
    page.goto(server + f"runs/{STATUSES}/index.html")
    page.wait_for_function(CHARTS_DRAWN)
    for figure in page.locator("figure.chart-box").all():
        assert figure.locator("figcaption").inner_text()
        link = figure.locator("a.chart-source, .chart-source a")
        target = link.get_attribute("href")
        assert target.startswith("#") and page.locator(target).count() == 1, f"a chart's text alternative points at {target}"
        assert figure.locator("[role=img]").count() == 0, "no image role around the chart's own buttons"
