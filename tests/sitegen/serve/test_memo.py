"""A long-running process's memory of the site it published: recalled only while the files are the ones it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from sitegen.build import build_site
from sitegen.content.catalog import CacheHead, RunEntry
from sitegen.publish.manifest import ManifestFile
from sitegen.serve import memo
from tests.builders import ROOT, same_as_fresh
from tests.sample_site import MIMO, built_sample


def _change_run(content: Path, value: float) -> None:
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["decode"][0]["total_tok_s"] = value
    path.write_text(json.dumps(bundle))


def test_a_value_is_recalled_only_while_its_file_is_the_one_written(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("one")
    memo.remember(path, "one")
    assert memo.recall(path) == "one"
    time.sleep(0.02)  # a change time ticks by the kernel's clock tick
    path.write_text("two")  # the same file written again: a new change time
    assert memo.recall(path) is None
    memo.remember(path, "two")
    path.with_name("new").write_text("three")
    path.with_name("new").replace(path)  # another file in its place (made first: not given the freed inode again)
    assert memo.recall(path) is None


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[type]:
    """The decodes this process makes of the build cache's head and record files and of the manifest, by type."""
    found: list[type] = []
    real = msgspec.msgpack.decode

    def counting(data: bytes, **kwargs: object) -> object:
        if kwargs.get("type") in (CacheHead, list[RunEntry], ManifestFile):
            found.append(kwargs["type"])  # type: ignore[arg-type]
        return real(data, **kwargs)

    monkeypatch.setattr(msgspec.msgpack, "decode", counting)
    return found


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    """The sample content/ and a site built from it by this process."""
    return built_sample(tmp_path)


def test_a_rebuild_in_the_same_process_reads_neither_cache_nor_manifest(built: tuple[Path, Path], decoded: list[type]) -> None:
    content, out = built
    _change_run(content, 123.4)
    decoded.clear()
    build_site(content, out)
    assert decoded == []
    assert same_as_fresh(content, out)


def test_a_site_another_process_rebuilt_is_read_again(built: tuple[Path, Path], decoded: list[type]) -> None:
    content, out = built
    _change_run(content, 234.5)
    subprocess.run([sys.executable, "-m", "sitegen", "build", "--content", str(content), "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    _change_run(content, 345.6)
    decoded.clear()
    build_site(content, out)
    assert sorted(map(str, decoded)) == ["<class 'sitegen.content.catalog.CacheHead'>", "<class 'sitegen.publish.manifest.ManifestFile'>"] + \
        ["list[sitegen.content.catalog.RunEntry]"] * 3  # a record file a run
    assert same_as_fresh(content, out)
