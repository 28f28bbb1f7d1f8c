"""The capacity view and ranking in a real chromium: readable without JavaScript, and with it the
reader's own targets give the answers sitegen/figures/capacity.py gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sitegen.figures.capacity import CHAT, PRESETS, capacity, check_target, json_records, ranked_run
from sitegen.importers.options import ImportOptions
from sitegen.importers.registry import import_file
from sitegen.views.capacity_view import answer, preset_rows, ranking
from tests.builders import SEEDS, block_offsite

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def seed_bundles() -> list:
    return [import_file(seed, ImportOptions()) for seed in SEEDS]


def _rows(page, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        selector + " tbody tr", "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText.replace(/\\s+/g, ' ').trim()))")


def _fill(page, form: str, values: dict[str, object]) -> None:
    for name, value in values.items():
        page.fill(f"{form} [name={name}]", "" if value is None else str(value))


def test_capacity_view_reads_without_javascript(browser, site_server: str, seed_bundles: list) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    bundle = seed_bundles[0]
    page.goto(site_server + f"runs/{bundle.id}/index.html")
    assert page.locator("#matrix #capacity").count() == 0 and page.locator("#capacity").count() == 1
    shown = _rows(page, "#capacity table.capacity-presets")
    want = [[row.label] + [f"{a.requests} at once {a.total} tok/s · {a.per_gpu} per GPU" if a.qualified
                           else "no cell meets both targets" for a in row.answers] for row in preset_rows(bundle)]
    assert shown == want
    assert page.locator("#capacity-form").is_hidden()
    assert "enter your own targets" in page.inner_text("#capacity")
    context.close()


def test_javascript_answers_the_readers_targets_as_python_does(page, site_server: str, seed_bundles: list, tmp_path: Path) -> None:
    outside = block_offsite(page, site_server)
    checked = 0
    for bundle in seed_bundles:
        page.goto(site_server + f"runs/{bundle.id}/index.html")
        page.wait_for_selector("#capacity-result table")
        # The inputs start at the Chat preset: the table must equal that preset's build-time column.
        chat = PRESETS.index(CHAT)
        shown = _rows(page, "#capacity-result")
        built = [[row.label] + ([a.requests, a.total, a.per_gpu] if a.qualified else ["no cell meets both targets"])
                 for row in preset_rows(bundle) for a in [row.answers[chat]]]
        assert shown == built
        cells = [(c.ttft_ms, c.per_request_tok_s) for c in bundle.decode if c.ttft_ms is not None]
        rng = random.Random(bundle.id)
        targets = [(1000, 20, 2.5), (250.5, 99.9, 0.75), (0, 0, 0)]
        targets += [(ttft, per_user, round(rng.uniform(0.5, 9), 2)) for ttft, per_user in rng.sample(cells, 4)]  # on exact values
        for ttft, per_user, price in targets:
            _fill(page, "#capacity-form", {"ttft_ms": ttft, "min_tok_s_per_user": per_user, "gpu_hour_usd": price})
            target = check_target(ttft, per_user, price)
            want = [[a.context] + ([a.requests, a.total, a.per_gpu, a.usd] if a.qualified else ["no cell meets both targets"])
                    for a in map(answer, capacity(bundle, target))]
            assert _rows(page, "#capacity-result") == want, (bundle.id, ttft, per_user, price)
            raw = page.evaluate(
                "([t, u, p]) => { const data = JSON.parse(document.getElementById('capacity-data').textContent);"
                " return window.speedMatrixCapacity.capacity(data, {ttftMs: t, minTokSPerUser: u, gpuHourUsd: p})"
                "; }", [ttft, per_user, price])
            for js, py in zip(raw, json_records(bundle, target), strict=True):
                assert js.keys() == py.keys()
                assert all(js[k] == (py[k] if py[k] is None else pytest.approx(py[k], rel=1e-12)) for k in py), (js, py)
            checked += 1
    _fill(page, "#capacity-form", {"ttft_ms": ""})
    assert page.inner_text("#capacity-result") == "Enter both targets."
    _fill(page, "#capacity-form", {"ttft_ms": 1000, "min_tok_s_per_user": 20, "gpu_hour_usd": 2.5})
    page.locator("#capacity").screenshot(path=str(tmp_path / "capacity-desktop.png"))
    page.set_viewport_size(PHONE)
    page.locator("#capacity").screenshot(path=str(tmp_path / "capacity-phone.png"))
    assert checked == 21 and outside == [] and page.console_errors == []


def test_index_ranks_runs_by_capacity_at_a_chosen_context_and_target(page, site_server: str, seed_bundles: list, tmp_path: Path) -> None:
    outside = block_offsite(page, site_server)
    page.goto(site_server + "capacity/index.html")
    ids = lambda: page.eval_on_selector_all("#ranking-table tbody tr", "rows => rows.map(r => r.getAttribute('data-id'))")  # noqa: E731
    built = ids()
    reasons: set[str | None] = set()
    assert built == [r.id for r in ranking([ranked_run(b) for b in seed_bundles], 8192, CHAT.target)]
    assert page.locator("#ranking-form").is_visible()
    for context, ttft, per_user in ((8192, 500, 50), (32768, 2000, 30), (1043456, 10_000, 1), (65536, 300, 100)):
        page.select_option("#ranking-form [name=context]", str(context))
        _fill(page, "#ranking-form", {"ttft_ms": ttft, "min_tok_s_per_user": per_user})
        # The first change loads the data chunks, so the table is redrawn after they arrive.
        page.wait_for_function("text => document.getElementById('ranking-caption').textContent.includes(text)",
                               arg=f"TTFT \u2264 {ttft:,} ms \u00b7 \u2265 {per_user:,} tok/s per user")
        want = ranking([ranked_run(b) for b in seed_bundles], context, check_target(ttft, per_user, None))
        assert ids() == [r.id for r in want]
        reasons.update(r.reason for r in want)
        cells = [row[2:] for row in _rows(page, "#ranking-table")]
        assert cells == [[r.answer.requests, r.answer.total, r.answer.per_gpu] if r.reason is None else [r.reason] for r in want]
        assert [row[0] for row in _rows(page, "#ranking-table")] == [str(i) for i in range(1, len(want) + 1)]
    assert {None, "no cell meets both targets", "not measured at 1019K"} <= reasons, "every kind of answer was checked"
    page.locator("#capacity-ranking").screenshot(path=str(tmp_path / "ranking-desktop.png"))
    page.set_viewport_size(PHONE)
    page.locator("#capacity-ranking").screenshot(path=str(tmp_path / "ranking-phone.png"))
    assert outside == [] and page.console_errors == []


def test_javascript_formats_numbers_as_python_does(page, site_server: str, seed_bundles: list) -> None:
    from runner.bundle import formats as f

    page.goto(site_server + f"runs/{seed_bundles[0].id}/index.html")
    rng = random.Random(12)
    values = [0.0, 0.05, 0.15, 1.005, 2.675, 9999.94, 9999.95, 10_000.0, 12_345.65, 99_999.95, 1_234_567.0, 2956.35, 0.004, 0.005]
    values += [round(rng.uniform(0, 50_000), rng.choice((1, 2, 3))) for _ in range(200)] + [rng.uniform(0, 100) for _ in range(100)]
    shown = page.evaluate("values => values.map(v => [window.speedMatrixCapacity.tokS(v), window.speedMatrixCapacity.usd(v)])", values)
    assert shown == [[f.tok_s(v), f.usd(v)] for v in values]
