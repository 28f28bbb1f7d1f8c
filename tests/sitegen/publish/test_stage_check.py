"""The kept stage's check by folder snapshots: a folder whose snapshot holds is trusted to hold what
was recorded, any other is listed, and the result is the full listing's whatever was changed."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from sitegen.publish import stage_check

FILES = ["index.html", "runs/a/index.html", "runs/a/bundle.json", "runs/b/index.html", "runs/b/bundle.json",
         "compare/a-vs-b.html", "data/runs-0.js"]


def _tree(root: Path) -> dict[str, int]:
    """A small published tree; its files by inode."""
    for relative in FILES:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(relative)
    return {relative: (root / relative).stat().st_ino for relative in FILES}


def _recorded(root: Path) -> stage_check.Folders:
    """The tree's folders by snapshot, as a build records them after writing it, once the file
    system's clock (which new files take in ticks of a few milliseconds) has moved past the writes."""
    time.sleep(0.02)
    folders = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()}
    return stage_check.retaken(str(root), {}, folders)


def _listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders the check lists (rather than trusts)."""
    listed: list[str] = []
    real = stage_check._Checker.visit

    def visit(self: stage_check._Checker, folder: int, relative: str, trusted: bool) -> bool:
        if not trusted:
            listed.append(relative)
        return real(self, folder, relative, trusted)

    monkeypatch.setattr(stage_check._Checker, "visit", visit)
    return listed


def _planted(root: Path, outside: Path) -> None:
    (root / "runs" / "a" / "planted.html").write_text("not the site's")


def _deleted(root: Path, outside: Path) -> None:
    (root / "runs" / "b" / "bundle.json").unlink()


def _replaced(root: Path, outside: Path) -> None:
    # Made before the old file goes, so that it cannot be given the old file's freed inode number
    # (which the file system may hand out again at once, in one tree of the two and not the other).
    (root / "runs" / "a" / "index.html.new").write_text("a new file where a published one was")
    (root / "runs" / "a" / "index.html.new").replace(root / "runs" / "a" / "index.html")


def _linked_folder(root: Path, outside: Path) -> None:
    for path in (root / "runs" / "b").iterdir():
        path.unlink()
    (root / "runs" / "b").rmdir()
    (root / "runs" / "b").symlink_to(outside, target_is_directory=True)


def _folder_gone(root: Path, outside: Path) -> None:
    for path in (root / "runs" / "b").iterdir():
        path.unlink()
    (root / "runs" / "b").rmdir()


def _new_folder(root: Path, outside: Path) -> None:
    (root / "runs" / "c").mkdir()
    (root / "runs" / "c" / "index.html").write_text("planted")


@pytest.mark.parametrize("tamper", [_planted, _deleted, _replaced, _linked_folder, _folder_gone, _new_folder])
def test_a_stage_changed_after_its_snapshots_is_checked_as_a_full_listing_checks_it(
        tmp_path: Path, tamper: Callable[[Path, Path], None]) -> None:
    results = []
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("outside the stage")
    for recorded in (True, False):
        root = tmp_path / f"stage-{recorded}"
        root.mkdir()
        files = _tree(root)
        folders = _recorded(root) if recorded else {}
        tamper(root, outside)
        found = stage_check.check(str(root), files, files if recorded else {}, folders)
        left = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        results.append((found.missing, left))
    assert results[0] == results[1]
    assert (outside / "keep.txt").read_text() == "outside the stage"
    assert not any(Path(tmp_path, "stage-True", p).is_symlink() for p in results[0][1])


def test_an_unchanged_stage_lists_only_its_top_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    folders = _recorded(tmp_path)
    listed = _listed(monkeypatch)
    found = stage_check.check(str(tmp_path), files, files, folders)
    assert listed == [""] and found.missing == [] and found.changed == []
    assert found.folders == folders


def test_files_the_published_site_replaced_are_removed_from_a_trusted_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    folders = _recorded(tmp_path)
    published = {**files, "runs/a/index.html": files["runs/a/index.html"] + 10_000_000}  # rendered again since
    listed = _listed(monkeypatch)
    found = stage_check.check(str(tmp_path), published, files, folders)
    assert listed == [""]
    assert found.missing == ["runs/a/index.html"] and not (tmp_path / "runs" / "a" / "index.html").exists()
    assert found.changed == ["runs/a"] and found.folders["runs/a"] is None  # its snapshot is taken after the build


def test_a_planted_file_changes_its_folders_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    folders = _recorded(tmp_path)
    _planted(tmp_path, tmp_path)
    listed = _listed(monkeypatch)
    stage_check.check(str(tmp_path), files, files, folders)
    assert "runs/a" in listed and "runs/b" not in listed
    assert not (tmp_path / "runs" / "a" / "planted.html").exists()


def test_only_snapshots_older_than_a_probe_made_after_them_are_kept(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    time.sleep(0.02)
    old = stage_check.snapshot(os.lstat(tmp_path / "old"))
    future = (1, 2, old[2] + 3600 * 10**9)  # a change time the probe's cannot be past
    kept = stage_check.settled(str(tmp_path), {"old": old, "future": future, "none": None})
    assert kept == {"old": old, "future": None, "none": None}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]  # the probe is gone


class _SecondsClock:
    """os as a file system that keeps times to the second shows it (ext4 with small inodes, FAT, some
    network file systems): a change later in the same second leaves a folder's times as they were."""

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    @staticmethod
    def _coarse(found: os.stat_result) -> SimpleNamespace:
        second = lambda ns: ns - ns % 10**9  # noqa: E731
        return SimpleNamespace(st_ino=found.st_ino, st_mode=found.st_mode, st_mtime_ns=second(found.st_mtime_ns),
                               st_ctime_ns=second(found.st_ctime_ns))

    def stat(self, *args: object, **kwargs: object) -> SimpleNamespace:
        return self._coarse(os.stat(*args, **kwargs))

    def lstat(self, *args: object, **kwargs: object) -> SimpleNamespace:
        return self._coarse(os.lstat(*args, **kwargs))

    def fstat(self, *args: object, **kwargs: object) -> SimpleNamespace:
        return self._coarse(os.fstat(*args, **kwargs))


def test_a_file_planted_in_the_same_second_on_a_file_system_with_second_times_is_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage_check, "os", _SecondsClock())
    files = _tree(tmp_path)
    folders = _recorded(tmp_path)  # taken just after the tree was written
    _planted(tmp_path, tmp_path)  # most likely within the same second: the folder's times do not change
    stage_check.check(str(tmp_path), files, files, folders)
    assert not (tmp_path / "runs" / "a" / "planted.html").exists()


def test_retaken_takes_the_changed_folders_and_those_above_again_and_drops_those_gone(tmp_path: Path) -> None:
    _tree(tmp_path)
    folders = _recorded(tmp_path)
    _folder_gone(tmp_path, tmp_path)
    (tmp_path / "runs" / "a" / "new.html").write_text("new")
    again = stage_check.retaken(str(tmp_path), folders, ["runs/a", "runs/b"])
    assert "runs/b" not in again and again["compare"] == folders["compare"]
    assert again["runs/a"] != folders["runs/a"] and again["runs"] != folders["runs"]
