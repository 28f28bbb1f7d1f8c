"""Bundles decoded by forked workers: the same records, and every bad file still named, in file order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sitegen import catalog, parallel
from sitegen.errors import InputErrors
from tests.builders import ROOT


def _runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "content" / "runs", runs)
    return runs


def test_workers_read_the_same_records_as_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path)
    alone = catalog.scan(runs, {}, jobs=1)
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    monkeypatch.setattr(catalog, "SCAN_CHUNK", 1)
    assert catalog.scan(runs, {}, jobs=2) == alone and len(alone) == 3


def test_workers_report_every_bad_file_in_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path)
    (runs / "a-broken.json").write_text("{")
    (runs / "z-wrong.json").write_text('{"id": 3}')
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    with pytest.raises(InputErrors) as raised:
        catalog.scan(runs, {}, jobs=2)
    lines = [e.line() for e in raised.value.errors]
    assert len(lines) == 2 and lines[0].startswith(f"{runs / 'a-broken.json'}:1:2: invalid JSON")
    assert lines[1].startswith(f"{runs / 'z-wrong.json'}:$.id: ")
