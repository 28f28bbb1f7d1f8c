"""The capacity ranking page of a large site: its first screen as HTML with no run data inline, and
a reader's own targets ranking every run from the data chunks, loaded on demand."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitegen import capacity
from sitegen.build import build_site
from sitegen.capacity import check_target, ranking
from sitegen.loader import load_bundle
from tests.conftest import ROOT, serve_folder

RUNS = 14


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    content = tmp_path_factory.mktemp("ranked") / "content"
    shutil.copytree(ROOT / "content", content)
    base = json.loads(sorted((content / "runs").glob("*.json"))[0].read_text())
    for i in range(RUNS):
        bundle = json.loads(json.dumps(base))
        bundle.update(id=f"run-{i:02d}", measured_at=f"2026-08-{i + 1:02d}T10:00:00Z")
        for cell in bundle["decode"]:
            if cell.get("total_tok_s") is not None:
                cell["total_tok_s"] = round(cell["total_tok_s"] * (1 + (i * 5 % 7) / 7), 1)
        (content / "runs" / f"run-{i:02d}.json").write_text(json.dumps(bundle))
    out = tmp_path_factory.mktemp("ranked-built") / "site"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(capacity, "RANKING_SCREEN", 4)
        patch.setattr(capacity, "RANKING_CHUNK", 5)
        build_site(content, out)
    return out


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    yield from serve_folder(site)


def _bundles(site: Path) -> list:
    """The site's runs, as the build read them (its bundle.json copies)."""
    return [load_bundle(p) for p in sorted(site.glob("runs/*/bundle.json"))]


def test_the_ranking_page_renders_one_screen_and_keeps_the_runs_in_chunks(site: Path) -> None:
    html = (site / "capacity" / "index.html").read_text()
    assert html.count("<tr data-id=") == 4 and f"The first 4 of {RUNS + 3} runs." in html
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
    want = [r.id for r in ranking(_bundles(site), context, check_target(2000, 10, None))][:4]
    page.wait_for_function("want => Array.from(document.querySelectorAll('#ranking-table tbody tr')).map(r => r.getAttribute('data-id')).join() === want",
                           arg=",".join(want))
    assert sorted(asked) == ["runs-0.js", "runs-1.js", "runs-2.js", "runs-3.js"] and page.console_errors == []
