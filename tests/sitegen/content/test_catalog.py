"""The build's run records: read once per changed file, cached between builds, errors collected."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sitegen.build import build_site
from sitegen.content import catalog
from sitegen.errors import InputErrors
from sitegen.pages import run_pages
from sitegen.support import parallel
from tests.builders import same_as_fresh
from tests.sample_site import MIMO, write_content


def test_a_rebuild_decodes_only_the_bundle_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    build_site(content, out)
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["model"] = "MiMo-Renamed"
    path.write_text(json.dumps(bundle))
    decoded: list[str] = []
    real = catalog.entry_of
    monkeypatch.setattr(catalog, "entry_of", lambda p, stamp, bundle, pieces, **kw: decoded.append(p.name) or real(p, stamp, bundle, pieces, **kw))
    build_site(content, out)
    assert decoded == [path.name]
    assert "MiMo-Renamed" in (out / "index.html").read_text()


def _decoded_in_build(content: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Build, and return the names of the bundle files the build decoded."""
    decoded: list[str] = []
    real = catalog.entry_of
    monkeypatch.setattr(catalog, "entry_of", lambda p, stamp, bundle, pieces, **kw: decoded.append(p.name) or real(p, stamp, bundle, pieces, **kw))
    build_site(content, out)
    monkeypatch.undo()
    return decoded


def test_a_cache_from_other_code_or_broken_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    build_site(content, out)
    state = tmp_path / ".site.sitegen" / "state"  # the build's bookkeeping, beside the site
    assert len(catalog.read_cache(state, "other code").entries) == 0
    cache = catalog.cache_folder(state)
    shard = next(cache.glob("runs-*"))
    # a record file loses its run's record, the pairs file the pairs, the head every record
    for broken, runs in ((shard, 1), (cache / "pairs", 0), (cache / "head", 3)):
        broken.unlink()  # a published file is a hard link of the kept state's: replaced, not written through
        broken.write_bytes(b"\x00not msgpack")
        assert len(_decoded_in_build(content, out, monkeypatch)) == runs
        assert same_as_fresh(content, out)


def test_a_rebuild_writes_only_the_record_file_of_the_run_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    build_site(content, out)
    files = lambda: {p.name: p.stat().st_ino for p in catalog.cache_folder(tmp_path / ".site.sitegen" / "state").iterdir()}  # noqa: E731
    before = files()
    assert len(before) == 4 + 3  # the head, the pairs, what settling found, the series' notices and a record file a run (of 256)
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["decode"][0]["total_tok_s"] = 999.9  # measured again: the pairs stay
    path.write_text(json.dumps(bundle))
    assert _decoded_in_build(content, out, monkeypatch) == [path.name]
    after = files()
    assert {name for name in after if before.get(name) != after[name]} == {"head", "settled", catalog._shard(path.name).rpartition("/")[2]}
    assert _decoded_in_build(content, out, monkeypatch) == []
    assert same_as_fresh(content, out)


def test_every_bad_file_and_a_reused_id_are_reported_even_from_the_cache(tmp_path: Path) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    build_site(content, out)
    (content / "runs" / "broken.json").write_text("{")
    shutil.copy(content / "runs" / f"{MIMO}.json", content / "runs" / "twin.json")
    with pytest.raises(InputErrors) as raised:
        build_site(content, out)
    lines = [e.line() for e in raised.value.errors]
    assert any("broken.json" in line for line in lines) and any("twin.json" in line and "already used" in line for line in lines)


def test_rendering_in_worker_processes_gives_the_same_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content = write_content(tmp_path)
    build_site(content, tmp_path / "alone", jobs=1)
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    monkeypatch.setattr(run_pages, "WORKER_CHUNK", 1)
    build_site(content, tmp_path / "workers", jobs=2)
    tree = lambda root: {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}  # noqa: E731
    alone, workers = tree(tmp_path / "alone"), tree(tmp_path / "workers")
    assert alone == workers and any(path.startswith("compare/") and "-vs-" in path for path in workers)
