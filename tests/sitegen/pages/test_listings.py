"""Incremental listings: a rebuild after one run changed carries its new figures into the data chunk
and the sort orders, and renders again only the chunk and the model and GPU pages that hold it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.build import build_site
from sitegen.content.catalog import cache_folder
from sitegen.pages import listings
from sitegen.slug import slugify
from sitegen.views import charts, index_view
from tests.builders import same_as_fresh, site_order
from tests.sample_site import INKLING, sample_run, write_content

CHANGED = INKLING  # the slowest sample run: another leads until it is sped up


def _inodes(out: Path, pattern: str) -> dict[str, int]:
    return {p.relative_to(out).as_posix(): p.stat().st_ino for p in sorted(out.glob(pattern))}


def _group_pages(out: Path) -> dict[str, int]:
    """The model and GPU pages, by path, with their inodes (a page rendered again gets a new one)."""
    return _inodes(out, "models/*/index.html") | _inodes(out, "gpus/*/index.html")


@pytest.fixture()
def content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample runs, listed one run a data chunk so that a rebuild shows which chunk it wrote."""
    monkeypatch.setattr(index_view, "CHUNK_RUNS", 1)
    return write_content(tmp_path)


def _speed_up(content: Path, factor: float) -> None:
    path = content / "runs" / f"{CHANGED}.json"
    bundle = json.loads(path.read_text())
    for cell in bundle["decode"]:
        if cell.get("total_tok_s") is not None:
            cell["total_tok_s"] = round(cell["total_tok_s"] * factor, 1)
    path.write_text(json.dumps(bundle))


def test_a_changed_runs_figures_reach_its_chunk_and_the_sort_orders_and_only_its_pages_render_again(content: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(content, out)
    chunks, groups = _inodes(out, "data/runs-*.js"), _group_pages(out)
    assert CHANGED not in [r["id"] for r in site_order(out, "peak-descending")[1][:1]], "another run leads before the change"
    _speed_up(content, 100)
    build_site(content, out)
    positions, first = site_order(out, "peak-descending")
    runs = json.loads((out / "runs.json").read_text())
    fastest = max(runs, key=lambda r: r["peak_tok_s"])
    assert first[0]["id"] == CHANGED == fastest["id"] and first[0]["cells"]["peak"][1] == fastest["peak_tok_s"]
    written = [path for path, inode in _inodes(out, "data/runs-*.js").items() if chunks[path] != inode]
    assert len(written) == 1 and CHANGED in (out / written[0]).read_text()
    assert f'"{CHANGED}"' in (out / "data" / f"runs-{positions[0]}.js").read_text(), "positions index the chunks' order"
    rendered = {path for path, inode in _group_pages(out).items() if groups[path] != inode}
    changed = sample_run(CHANGED)
    assert rendered == {f"models/{slugify(changed.model)}/index.html", f"gpus/{slugify(changed.hardware.gpu)}/index.html"}


def test_a_rebuild_of_the_same_runs_writes_no_chunk_order_or_listing_page_again(content: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(content, out)
    before = _inodes(out, "data/*.js") | _group_pages(out)
    build_site(content, out)
    assert _inodes(out, "data/*.js") | _group_pages(out) == before


def test_a_rebuild_writes_again_only_the_sort_orders_the_change_moved_or_shows(
        content: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_view, "FIRST_SCREEN", 1)  # each order's first screen: one run
    out = tmp_path / "site"
    build_site(content, out)
    names = [p.name.removeprefix("sort-").removesuffix(".js") for p in sorted((out / "data").glob("sort-*.js"))]
    before = {name: site_order(out, name) for name in names}
    inodes = _inodes(out, "data/*-*.js")
    _speed_up(content, 100)
    build_site(content, out)
    after = {name: site_order(out, name) for name in names}
    rewritten = {path for path, inode in _inodes(out, "data/*-*.js").items() if inodes[path] != inode}
    shown = {name for name in names if CHANGED in (before[name][1][0]["id"], after[name][1][0]["id"])}
    moved = {name for name in names if before[name][0] != after[name][0]}
    assert {path for path in rewritten if "/sort-" in path} == {f"data/sort-{name}.js" for name in shown}, "first screens showing it"
    assert {path for path in rewritten if "/positions-" in path} == {f"data/positions-{name}.js" for name in moved}, "orders it moved in"
    assert 0 < len(shown) < len(names) and 0 < len(moved) < len(names)
    assert after["peak-descending"][1][0]["id"] == CHANGED, "a hundred times as fast: it leads"
    assert same_as_fresh(content, out)


def test_a_sort_order_deleted_from_the_site_and_its_stage_is_written_again_though_no_run_changed(content: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(content, out)
    build_site(content, out)  # the stage kept beside the site now holds this site's orders too
    for site in (out, tmp_path / ".site.sitegen" / "stage"):
        (site / "data" / "sort-peak-descending.js").unlink()
    build_site(content, out)
    assert (out / "data" / "sort-peak-descending.js").is_file() and same_as_fresh(content, out)


def test_a_site_whose_runs_are_all_removed_lists_none_in_its_sort_orders(content: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(content, out)
    build_site(content, out)
    for bundle in (content / "runs").glob("*.json"):
        bundle.unlink()
    build_site(content, out)
    assert site_order(out, "peak-descending") == ([], []) and same_as_fresh(content, out)


def test_the_index_chart_works_again_only_the_frontier_of_the_changed_runs_gpu_type(
        content: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts, "MAX_RUN_TRACES", 1)  # the chart of a large site: a frontier per GPU type
    out = tmp_path / "site"
    build_site(content, out)
    decoded: list[str] = []  # the runs whose chart points a build decodes
    real = listings.frontier_points
    monkeypatch.setattr(listings, "frontier_points", lambda site, entry: decoded.append(entry.id) or real(site, entry))
    path = content / "runs" / f"{CHANGED}.json"
    bundle = json.loads(path.read_text())
    bundle["decode"][0]["total_tok_s"] = 999.9
    path.write_text(json.dumps(bundle))
    build_site(content, out, jobs=1)  # the listings in this process, where the decodes are counted
    gpus = {json.loads(p.read_text())["id"]: json.loads(p.read_text())["hardware"]["gpu"] for p in (content / "runs").glob("*.json")}
    assert sorted(decoded) == sorted(run for run, gpu in gpus.items() if gpu == gpus[bundle["id"]]) and len(decoded) < len(gpus)
    assert same_as_fresh(content, out)
    decoded.clear()
    for kept in cache_folder(tmp_path / ".site.sitegen" / "state").glob("frontier-*"):
        kept.unlink()
        kept.write_bytes(b"\x00not msgpack")  # unreadable: made again, whatever its key says, once the index reads it
    bundle["decode"][0]["total_tok_s"] = 888.8
    path.write_text(json.dumps(bundle))
    build_site(content, out, jobs=1)
    assert sorted(decoded) == sorted(gpus) and same_as_fresh(content, out)
