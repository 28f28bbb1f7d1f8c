"""The published folder holds the site and nothing else: no build manifest, cache, inode record, stage
or lock, after a build, a rebuild, a failed build, or a site built by an earlier sitegen."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import msgspec
import pytest

from sitegen.build import build_site
from sitegen.errors import InputError, InputErrors
from sitegen.pages.render import DEFAULT_TEMPLATES
from tests.builders import same_as_fresh
from tests.sample_site import MIMO, write_content

SITE_SUFFIXES = {".html", ".js", ".css", ".json", ".csv", ".txt", ".xml"}  # what a page, an asset or a download is


def _change_run(content: Path, value: float) -> None:
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["decode"][0]["total_tok_s"] = value
    path.write_text(json.dumps(bundle))


def _only_the_site(out: Path) -> None:
    """Every entry under `out` is a page, an asset or a download: nothing hidden, no file without a web suffix."""
    for folder, folders, files in os.walk(out):
        for name in [*folders, *files]:
            assert not name.startswith("."), f"{folder}/{name}"
        for name in files:
            assert Path(name).suffix in SITE_SUFFIXES, f"{folder}/{name}"
            assert not os.path.islink(f"{folder}/{name}")


def test_a_build_and_its_rebuilds_publish_only_the_site(tmp_path: Path) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    build_site(content, out)
    _only_the_site(out)
    for value in (111.1, 222.2, 333.3):  # the third rebuild takes the stage kept by the first
        _change_run(content, value)
        build_site(content, out)
        _only_the_site(out)
    assert same_as_fresh(content, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".fresh.sitegen", ".site.sitegen", "content", "fresh", "site"]


def test_a_failed_build_leaves_only_the_site_in_the_folder(tmp_path: Path) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    build_site(content, out)
    _change_run(content, 111.1)
    build_site(content, out)
    (content / "runs" / "broken.json").write_text("{not json")
    with pytest.raises(InputErrors):
        build_site(content, out)
    _only_the_site(out)
    assert sorted(p.name for p in (tmp_path / ".site.sitegen").iterdir()) == ["kept-state", "stage", "state"]


def _earlier_layout(tmp_path: Path, out: Path) -> None:
    """What an earlier sitegen left: its manifest and cache inside the site, its stages beside it."""
    (out / ".build-runs").mkdir()
    for shard in ("head", "pairs", "runs-7"):
        (out / ".build-runs" / shard).write_bytes(msgspec.msgpack.encode(["earlier", shard]))
    (out / ".build-manifest").write_bytes(msgspec.msgpack.encode([3, {"index.html": ["k", ["index.html"]]}]))
    (out / ".build-manifest.json").write_text("{}")
    for beside in (".site-stage", ".site-build-killed"):
        shutil.copytree(out, tmp_path / beside)
        (tmp_path / beside / ".published-inodes").write_bytes(b"\x90")


def test_a_site_built_by_an_earlier_sitegen_is_cleaned_on_the_next_build(tmp_path: Path) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    build_site(content, tmp_path / "reference")
    shutil.copytree(tmp_path / "reference", out)
    shutil.rmtree(tmp_path / "reference")
    shutil.rmtree(tmp_path / ".reference.sitegen")
    _earlier_layout(tmp_path, out)
    build_site(content, out)  # accepted as sitegen's (it holds a manifest), and rebuilt whole
    _only_the_site(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.sitegen", "content", "site"]
    _change_run(content, 111.1)
    build_site(content, out)  # the earlier site, now the kept stage, is checked: its hidden files go too
    _only_the_site(out)
    assert not [p for p in (tmp_path / ".site.sitegen" / "stage").rglob(".*")]
    assert same_as_fresh(content, out)


def test_a_hidden_file_among_the_templates_static_files_is_not_published(tmp_path: Path) -> None:
    content, out, templates = write_content(tmp_path), tmp_path / "site", tmp_path / "templates"
    shutil.copytree(DEFAULT_TEMPLATES, templates)
    (templates / "static" / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (templates / "static" / ".git").mkdir()
    (templates / "static" / ".git" / "config").write_text("[core]\n")
    build_site(content, out, templates)
    _only_the_site(out)
    assert (out / "static" / "style.css").is_file()


def test_a_folder_sitegen_did_not_build_is_still_refused(tmp_path: Path) -> None:
    """The folder beside a site is what marks it as sitegen's: another folder, without one, is not replaced."""
    content, out = write_content(tmp_path), tmp_path / "documents"
    out.mkdir()
    (out / "letter.txt").write_text("keep")
    with pytest.raises(InputError, match="did not build"):
        build_site(content, out)
    assert (out / "letter.txt").read_text() == "keep" and sorted(p.name for p in tmp_path.iterdir()) == ["content", "documents"]
