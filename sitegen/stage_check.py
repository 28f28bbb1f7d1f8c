"""The kept stage's check: which of its files are the published site's own, and each folder's snapshot.

A stage keeps only the plain files that are hard links of the published site's (the same inode at the
same path); everything else in it goes, links and strays included. Walking a 10,000-run stage's
10,000 folders and 65,000 files took 0.24 s of CPU; by the snapshots below, 0.07 s.

A folder's snapshot is its inode and its modification and change times. Adding, removing or renaming
an entry changes a folder's times, and no one can set a change time back, so a folder whose snapshot
is the one its build recorded holds the entries it held then: its files are that build's record, and
the check need only stat it, not list it. A folder whose snapshot differs, or has none, is listed and
checked file by file. The top folder is always listed (the swap renames it, which changes its time).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable

import msgspec

Snapshot = tuple[int, int, int]  # a folder's inode, modification and change time (ns)
Folders = dict[str, Snapshot | None]  # every folder of a tree below its top ("runs/x"), None where no snapshot is trusted
# A snapshot taken this soon after the folder's last change is not kept: with a coarse clock, a change
# made just after the snapshot could get the same times.
SETTLED_NS = 20_000_000
_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Checked(msgspec.Struct, array_like=True):
    """What the check found: the published files the stage lacks, the stage's folders by snapshot after
    it, and the folders it changed (removed something in), whose snapshots are taken after the build."""

    missing: list[str]
    folders: Folders
    changed: list[str]


def snapshot(found: os.stat_result, taken: int) -> Snapshot | None:
    """A folder's snapshot from its stat taken at `taken` (time.time_ns()), or None if it changed too soon before."""
    if found.st_ctime_ns + SETTLED_NS > taken:
        return None
    return (found.st_ino, found.st_mtime_ns, found.st_ctime_ns)


def check(root: str, published: dict[str, int], files: dict[str, int], folders: Folders) -> Checked:
    """Keep in the stage at root only the published site's files; `files` and `folders` are the stage as
    its own build published it ({} when unknown: every folder is listed). Raises OSError where the
    stage cannot be checked (an entry that cannot be read or removed)."""
    checker = _Checker(published, files, folders)
    top = os.open(root, _OPEN_FOLDER)
    try:
        checker.visit(top, "", trusted=False)
    finally:
        os.close(top)
    return Checked(sorted(published.keys() - checker.kept.keys()), checker.snapshots, checker.changed)


def retaken(root: str, folders: Folders, changed: Iterable[str]) -> Folders:
    """The folders' snapshots with those of the changed folders (and the folders above them) taken again,
    and the folders gone dropped: a tree's snapshots after a build wrote into it."""
    again: set[str] = set()
    for folder in changed:
        while folder and folder not in again:
            again.add(folder)
            folder = folder.rpartition("/")[0]
    result = dict(folders)
    for folder in sorted(again):
        taken = time.time_ns()
        try:
            found = os.lstat(f"{root}/{folder}")
        except FileNotFoundError:
            result.pop(folder, None)
            continue
        if stat.S_ISDIR(found.st_mode):
            result[folder] = snapshot(found, taken)
        else:
            result.pop(folder, None)
    return result


class _Checker:
    """One check of a stage: folders visited from the top by their descriptors, never following a link
    (a folder swapped for a link while this runs cannot redirect a removal outside the stage)."""

    def __init__(self, published: dict[str, int], files: dict[str, int], folders: Folders) -> None:
        self.published = published
        self.files = files
        self.folders = folders
        # The recorded files that are the published ones: kept while their folder's snapshot holds.
        self.kept = {relative: inode for relative, inode in files.items() if published.get(relative) == inode} if folders else {}
        self.strays = _by_folder(files.keys() - self.kept.keys()) if folders else {}
        self.children = _by_folder(folders)
        self.recorded: dict[str, list[str]] | None = None  # the recorded files by folder, grouped when first needed
        self.snapshots: Folders = {}
        self.changed: list[str] = []

    def visit(self, folder: int, relative: str, trusted: bool) -> bool:
        """One folder (`relative` to the top, "" for the top); True when nothing is left in it. A trusted
        folder holds what was recorded: only its strays are removed. Any other is listed."""
        prefix = relative + "/" if relative else ""
        changed = False
        if trusted:
            names, empty = self.children.get(relative, []), False
            for name in self.strays.get(relative, ()):
                os.unlink(name, dir_fd=folder)
                changed = True
        else:
            self._forget(relative)  # the listing tells which of its files are there
            names, empty = [], True
            with os.scandir(folder) as listing:
                entries = list(listing)
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    names.append(entry.name)
                elif entry.is_file(follow_symlinks=False) and self.published.get(path := prefix + entry.name) == (inode := entry.inode()):
                    self.kept[path] = inode
                    empty = False
                else:
                    os.unlink(entry.name, dir_fd=folder)
                    changed = True
            for name in set(self.children.get(relative, ())) - set(names):  # recorded folders gone
                self._forget_tree(prefix + name)
        for name in names:
            inner = prefix + name
            taken = time.time_ns()
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
            recorded = self.folders.get(inner)
            holds = recorded is not None and recorded == (found.st_ino, found.st_mtime_ns, found.st_ctime_ns) and stat.S_ISDIR(found.st_mode)
            if holds and inner not in self.strays and inner not in self.children:
                self.snapshots[inner], empty = recorded, False
                continue
            if holds:
                self.snapshots[inner] = recorded
            elif stat.S_ISDIR(found.st_mode):
                self.snapshots[inner] = snapshot(found, taken)
            else:  # replaced by a link or a file since it was listed
                raise OSError(f"{inner} changed while the stage was checked")
            descriptor = os.open(name, _OPEN_FOLDER, dir_fd=folder)
            try:
                left_empty = self.visit(descriptor, inner, holds)
            finally:
                os.close(descriptor)
            if left_empty:
                os.rmdir(name, dir_fd=folder)
                self.snapshots.pop(inner)
                changed = True
            else:
                empty = False
        if changed and relative:
            self.changed.append(relative)
            self.snapshots[relative] = None
        return empty

    def _forget(self, relative: str) -> None:
        """Drop from the kept files the recorded ones of a folder that is listed instead."""
        if not self.folders:
            return
        if not relative:  # the top, listed every time: its few files, without grouping 65,000
            names = [path for path in self.files if "/" not in path]
        else:
            if self.recorded is None:
                self.recorded = _by_folder(self.files)
            names = self.recorded.get(relative, [])
        prefix = relative + "/" if relative else ""
        for name in names:
            self.kept.pop(prefix + name, None)

    def _forget_tree(self, relative: str) -> None:
        """Drop the recorded files of a folder that is gone, and of the recorded folders inside it."""
        self._forget(relative)
        for name in self.children.get(relative, ()):
            self._forget_tree(f"{relative}/{name}")


def _by_folder(paths: Iterable[str]) -> dict[str, list[str]]:
    """Names by the folder they are in ("" for the top): {"runs/x": ["index.html", ...]}."""
    found: dict[str, list[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        found.setdefault(folder, []).append(name)
    return found
