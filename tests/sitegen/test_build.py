"""Whole-site builds: every download present, byte-identical rebuilds, incremental reuse."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from runner.bundle.schema import decode_bundle
from sitegen.build import build_site
from sitegen.errors import InputError
from sitegen.pages import listings, registry
from tests.builders import same_as_fresh, tree_digest
from tests.sample_site import MIMO, built_sample, write_content


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_site_has_every_download(built_site: Path) -> None:
    runs = json.loads((built_site / "runs.json").read_text())
    assert len(runs) == 3
    for run in runs:
        folder = built_site / "runs" / run["id"]
        bundle = decode_bundle((folder / "bundle.json").read_bytes())
        rows = list(csv.DictReader(io.StringIO((folder / "measurements.csv").read_text())))
        assert len(rows) == len(bundle.prefill) + len(bundle.decode)
        assert (built_site / run["url"]).resolve() == (folder / "index.html").resolve()
    with (built_site / "runs.csv").open() as handle:
        assert [r["id"] for r in csv.DictReader(handle)] == [r["id"] for r in runs]
    schema = json.loads((built_site / "schema" / "bundle.schema.json").read_text())
    assert "Bundle" in json.dumps(schema)
    feed = ET.parse(built_site / "feed.xml").getroot()
    assert len(feed.findall("{http://www.w3.org/2005/Atom}entry")) == 3
    assert (built_site / "static" / "plotly-basic.min.js").stat().st_size > 1_000_000


def test_same_content_builds_a_byte_identical_site(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    build_site(content, tmp_path / "one")
    build_site(content, tmp_path / "two")
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")


def test_rebuild_after_one_bundle_changes_rerenders_only_that_run(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    out = tmp_path / "site"
    first = build_site(content, out)
    assert "0 unchanged and reused" in first
    unchanged = sorted((out / "runs").glob("*/index.html"))
    inodes = {p.parent.name: p.stat().st_ino for p in unchanged}
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["decode"][0]["total_tok_s"] = 999.9
    path.write_text(json.dumps(bundle))
    report = build_site(content, out)
    changed = out / "runs" / MIMO / "index.html"
    assert "999.9" in changed.read_text()
    assert changed.stat().st_ino != inodes[MIMO]
    others = {p.parent.name: p.stat().st_ino for p in (out / "runs").glob("*/index.html")}
    assert {k: v for k, v in others.items() if k != changed.parent.name} == {
        k: v for k, v in inodes.items() if k != changed.parent.name
    }
    # its folder, comparison, model and GPU pages, the index, the feed, the ranking and its data chunk
    # holding it, the listings' data chunk holding it, the 24 sort orders' first screens (each shows it),
    # runs.json, runs.csv and its record in the build cache (the picker, the content pages, the schema,
    # the static files, the pairs, the series' notices, the other runs' records and the 24 orders'
    # positions, which its new figure moved in none, are reused)
    assert "(37 outputs rendered, 44 unchanged and reused)" in report
    fresh = tmp_path / "fresh"
    build_site(content, fresh)
    assert _tree(fresh) == _tree(out)


def test_a_run_measured_again_reaches_the_run_lists_and_the_ranking_in_a_rebuild(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    out = tmp_path / "site"
    build_site(content, out)
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["model"] = "MiMo-Remeasured"
    for cell in bundle["decode"]:  # ten times as fast: the best run at every context
        for name in ("total_tok_s", "per_request_tok_s"):
            cell[name] = cell[name] and round(cell[name] * 10, 1)
    path.write_text(json.dumps(bundle))
    build_site(content, out)
    peak = max(c["total_tok_s"] for c in bundle["decode"] if c["status"] in ("Valid", "Requests queued") and c["total_tok_s"] is not None)
    listed = {r["id"]: r for r in json.loads((out / "runs.json").read_text())}[bundle["id"]]
    assert (listed["model"], listed["peak_tok_s"]) == ("MiMo-Remeasured", peak)
    with (out / "runs.csv").open(newline="") as handle:
        row = {r["id"]: r for r in csv.DictReader(handle)}[bundle["id"]]
    assert (row["model"], float(row["peak_tok_s"])) == ("MiMo-Remeasured", peak)
    ranking = (out / "capacity" / "index.html").read_text()
    assert ranking.index(f'data-id="{bundle["id"]}"') < min(ranking.index(f'data-id="{r}"') for r in listed_ids(out) if r != bundle["id"])
    assert "MiMo-Remeasured" in ranking and "MiMo-Remeasured" in (out / "capacity" / "runs-0.js").read_text()
    fresh = tmp_path / "fresh"
    build_site(content, fresh)
    assert _tree(fresh) == _tree(out)


def listed_ids(site: Path) -> list[str]:
    """The ids runs.json lists."""
    return [r["id"] for r in json.loads((site / "runs.json").read_text())]


def test_adding_a_run_leaves_the_other_pages_alone(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    out = tmp_path / "site"
    build_site(content, out)
    bundle = json.loads((content / "runs" / f"{MIMO}.json").read_text())
    bundle.update(id="newcomer", model="Newcomer-7B")
    bundle["hardware"]["gpu"] = "RTX 6000"
    for cell in bundle["decode"]:  # measured on its own: not one run submitted twice, which would mark the other too
        cell["total_tok_s"] = cell["total_tok_s"] and cell["total_tok_s"] * 1.01
    (content / "runs" / "newcomer.json").write_text(json.dumps(bundle))
    report = build_site(content, out)
    # its folder, model and GPU pages, the index and the picker (which counts the runs), the feed, the ranking
    # and its chunk, the same data (the 24 sort orders: their first screens and, one run more, their
    # positions), and its record and the pairs in the cache
    assert "(62 outputs rendered, 23 unchanged and reused)" in report
    assert "Newcomer-7B" in (out / "index.html").read_text()


def test_index_chart_names_the_runs_it_cannot_plot(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    bundle = json.loads((content / "runs" / f"{MIMO}.json").read_text())
    bundle.update(id="no-gpu-count", model="Countless-7B")
    bundle["hardware"]["gpu_count"] = None
    (content / "runs" / "no-gpu-count.json").write_text(json.dumps(bundle))
    build_site(content, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    assert "their GPU count is unknown and so is their tok/s per GPU: Countless-7B." in index


def test_comparison_of_runs_that_share_no_cell_says_so(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    bundle = json.loads((content / "runs" / f"{MIMO}.json").read_text())
    bundle.update(id="mimo-on-b200")
    bundle["hardware"]["gpu"] = "B200"
    for cell in bundle["decode"]:
        cell["concurrency"] *= 256  # a concurrency the other run never measured
    (content / "runs" / "mimo-on-b200.json").write_text(json.dumps(bundle))
    build_site(content, tmp_path / "site")
    pages = [p for p in (tmp_path / "site" / "compare").glob("*.html") if "mimo-on-b200" in p.name]
    assert len(pages) == 1
    assert "No cell has a value in both runs" in pages[0].read_text()


def _rename(path: Path, prefix: str) -> None:
    """The bundle's model, renamed as a resubmission would."""
    bundle = json.loads(path.read_text())
    bundle["model"] = prefix + bundle["model"]
    path.write_text(json.dumps(bundle))


def _listings_written_by(monkeypatch: pytest.MonkeyPatch, write: Callable[..., None]) -> None:
    """The registry with the listings written by `write` instead."""
    kinds = tuple(msgspec.structs.replace(kind, write=write) if kind.name == listings.KIND.name else kind for kind in registry.KINDS)
    monkeypatch.setattr(registry, "KINDS", kinds)


def test_the_listings_are_written_in_another_process_and_what_it_raises_fails_the_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = built_sample(tmp_path)
    written_by = tmp_path / "written-by"

    def written(*args: object) -> None:
        written_by.write_text(str(os.getpid()))
        listings.write_listings(*args)

    _listings_written_by(monkeypatch, written)
    path = content / "runs" / f"{MIMO}.json"
    _rename(path, "Renamed ")
    build_site(content, out, jobs=2)
    assert int(written_by.read_text()) != os.getpid() and "Renamed MiMo" in (out / "index.html").read_text()
    assert same_as_fresh(content, out)
    old = tree_digest(out)

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out / "index.html"))

    _listings_written_by(monkeypatch, full)
    _rename(path, "Renamed again ")
    with pytest.raises(InputError) as failed:
        build_site(content, out, jobs=2)
    assert "cannot write the site: No space left on device" in failed.value.line() and tree_digest(out) == old


def test_a_ranking_page_deleted_from_the_site_is_put_back_though_no_run_changed(tmp_path: Path) -> None:
    """The ranking's first screen is worked out ahead only when its key changed; a page of the same
    key that is not whole in the site is made again all the same."""
    content, out = built_sample(tmp_path)
    (out / "capacity" / "index.html").unlink()
    assert "(1 outputs rendered" in build_site(content, out)
    assert same_as_fresh(content, out)
