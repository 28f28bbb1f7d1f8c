"""The listings' orders, computed at build time: what a column's order is, and that a first sort
of the whole listing draws from that order's small file alone, before any data chunk arrives."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from sitegen import index_view
from sitegen.build import build_site
from sitegen.index_view import RunRecord, ordering
from tests.conftest import ROOT, serve_folder

RUNS = 14


def _record(position: int, peak: float | str, model: str) -> RunRecord:
    return RunRecord(id=f"r{position}", model=model, model_slug=model.lower(), gpu="", gpu_slug="", engine="vllm",
                     cells={"peak": ["x", peak] if peak != "" else ["—"], "model": [model, model]})


def test_an_order_puts_runs_without_the_figure_last_either_way_and_keeps_ties_in_listing_order() -> None:
    records = [_record(0, 5.0, "b"), _record(1, "", "B"), _record(2, 9.5, "a"), _record(3, 5.0, "C"), _record(4, 1, "a")]
    assert ordering(records, "peak", ascending=False) == [2, 0, 3, 4, 1]
    assert ordering(records, "peak", ascending=True) == [4, 0, 3, 2, 1]
    assert ordering(records, "model", ascending=True) == [2, 4, 0, 1, 3], "text by its case-folded form, ties in order"
    assert ordering(records, "model", ascending=False) == [3, 0, 1, 2, 4]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    content = tmp_path_factory.mktemp("sorted") / "content"
    shutil.copytree(ROOT / "content", content)
    base = json.loads(sorted((content / "runs").glob("*.json"))[0].read_text())
    for i in range(RUNS):
        bundle = json.loads(json.dumps(base))
        bundle.update(id=f"run-{i:02d}", model=f"{('alpha', 'Beta', 'gamma')[i % 3]}-{i}B", measured_at=f"2026-08-{i + 1:02d}T10:00:00Z")
        for cell in bundle["decode"]:
            if cell.get("total_tok_s") is not None:
                cell["total_tok_s"] = round(cell["total_tok_s"] * (1 + (i * 5 % 7) / 7), 1)
        (content / "runs" / f"run-{i:02d}.json").write_text(json.dumps(bundle))
    out = tmp_path_factory.mktemp("sorted-built") / "site"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index_view, "FIRST_SCREEN", 4)
        patch.setattr(index_view, "CHUNK_RUNS", 5)
        build_site(content, out)
    return out


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    yield from serve_folder(site)


def _runs(site: Path) -> list[dict]:
    return json.loads((site / "runs.json").read_text())


def _column(page, index: int) -> list[str]:
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    return page.eval_on_selector_all("#runs-table tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value'))")


def test_the_build_writes_each_columns_orders_with_their_first_screen(site: Path) -> None:
    script = (site / "data" / "sort-peak-descending.js").read_text()
    name, positions, first = json.loads("[" + script.removeprefix("window.speedMatrixSort(").removesuffix(");\n") + "]")
    runs = {r["id"]: r for r in _runs(site)}
    listed = [runs[r["id"]] for r in first]
    assert name == "peak-descending" and sorted(positions) == list(range(RUNS + 3)) and len(first) == 4
    assert [r["peak_tok_s"] for r in listed] == sorted((r["peak_tok_s"] for r in runs.values()), reverse=True)[:4]
    assert all(msgspec.json.decode(json.dumps(r).encode(), type=RunRecord) for r in first)


@pytest.mark.browser
def test_a_first_sort_draws_from_its_order_alone_and_later_steps_use_every_run(page, site: Path, server: str) -> None:
    held: list[object] = []
    page.route("**/data/runs-*.js", lambda route: held.append(route))  # the chunks do not arrive yet
    page.goto(server + "index.html")
    page.click("#runs-table thead th[data-key=peak] button")
    every = sorted((r["peak_tok_s"] for r in _runs(site)), reverse=True)
    assert [float(v) for v in _column(page, 8)] == every[:4], "the biggest of all runs, with no chunk loaded"
    assert page.text_content("#runs-more") == f"Show 4 more of {RUNS + 3}"
    for route in held:
        route.continue_()
    page.unroute("**/data/runs-*.js")
    page.wait_for_function("() => window.speedMatrixData.load.records !== undefined")
    page.click("#runs-more")
    assert [float(v) for v in _column(page, 8)] == every[:8]
    page.click("#runs-table thead th[data-key=model] button")
    models = [r["model"] for r in sorted(_runs(site), key=lambda r: r["model"].casefold())]
    assert _column(page, 1) == models[:4] and page.console_errors == []
