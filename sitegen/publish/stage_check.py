"""The kept stage's check: which of its files are the published site's own, and each folder's snapshot.

A stage keeps only the plain files that are hard links of the published site's (the same inode at the
same path); everything else in it goes, links and strays included. Rather than walking every
folder and file of the stage, the check stats each folder and lists only those that changed.

A folder's snapshot is its inode and its modification and change times. Adding, removing or renaming
an entry changes a folder's times, and no one can set a change time back, so a folder whose snapshot
is the one its build recorded holds the entries it held then: its files are that build's record, and
the check need only stat it, not list it. A folder whose snapshot differs, or has none, is listed and
checked file by file. The top folder is always listed (the swap renames it, which changes its time).

A snapshot is kept only if the folder's change time is older than that of a probe file made on the
same file system after the snapshot was taken: a file system that keeps times to the second (or a
kernel whose clock ticks coarsely) gives a change made later in the same second the same times, and
the probe tells which snapshots a later change is sure to alter, by the file system's own clock.

The kept state folder (layout) is checked the same way, file by file (`check_state`: a few hundred
files), and `plain_files` walks a published site where no record of its files vouches for them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import msgspec

Snapshot = tuple[int, int, int]  # a folder's inode, modification and change time (ns)
Folders = dict[str, Snapshot | None]  # every folder of a tree below its top ("runs/x"), None where no snapshot is trusted
PROBE = ".snapshot-probe"  # made and removed in a tree's top folder (which is always listed)
_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Checked(msgspec.Struct, array_like=True):
    """What the check found: the published files the stage lacks, the stage's folders by snapshot after
    it, and the folders it changed (removed something in), whose snapshots are taken after the build."""

    missing: list[str]
    folders: Folders
    changed: list[str]


def snapshot(found: os.stat_result) -> Snapshot:
    """A folder's snapshot from its stat."""
    return (found.st_ino, found.st_mtime_ns, found.st_ctime_ns)


def settled(root: str, folders: Folders) -> Folders:
    """The snapshots of a tree's folders, less those a later change might not alter: the ones whose change
    time is not older than a probe file's made now in the tree's top folder. None for all where no probe
    can be made."""
    probe = f"{root}/{PROBE}-{os.getpid()}"
    try:
        descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            now = os.fstat(descriptor).st_ctime_ns
        finally:
            os.close(descriptor)
            os.unlink(probe)
    except OSError:
        return dict.fromkeys(folders)
    return {folder: taken if taken is not None and taken[2] < now else None for folder, taken in folders.items()}


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
    return Checked(sorted(published.keys() - checker.kept.keys()), settled(root, checker.snapshots), checker.changed)


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
        try:
            found = os.lstat(f"{root}/{folder}")
        except FileNotFoundError:
            result.pop(folder, None)
            continue
        if stat.S_ISDIR(found.st_mode):
            result[folder] = snapshot(found)
        else:
            result.pop(folder, None)
    return settled(root, result)


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
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
            recorded = self.folders.get(inner)
            holds = recorded is not None and recorded == snapshot(found) and stat.S_ISDIR(found.st_mode)
            if holds and inner not in self.strays and inner not in self.children:
                self.snapshots[inner], empty = recorded, False
                continue
            if holds:
                self.snapshots[inner] = recorded
            elif stat.S_ISDIR(found.st_mode):
                self.snapshots[inner] = snapshot(found)
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


def check_state(state: Path, published: Path | None) -> dict[str, int]:
    """Keep in an adopted state folder only the plain files that are the published state's (`published`;
    none where None) at the same path by inode, by their paths in the plan; remove everything else,
    folders left empty included. Folders are visited by descriptor, never following a link."""
    kept: dict[str, int] = {}

    def visit(folder: int, prefix: str) -> bool:
        """Check one folder; True when nothing is left in it."""
        empty = True
        with os.scandir(folder) as listing:
            entries = list(listing)
        for entry in entries:
            relative = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                inner = os.open(entry.name, _OPEN_FOLDER, dir_fd=folder)
                try:
                    emptied = visit(inner, relative + "/")
                finally:
                    os.close(inner)
                if emptied:
                    os.rmdir(entry.name, dir_fd=folder)
                empty = empty and emptied
            elif published is not None and entry.is_file(follow_symlinks=False) and is_plain(f"{published}/{relative}", entry.inode()):
                kept["." + relative] = entry.inode()
                empty = False
            else:
                os.unlink(entry.name, dir_fd=folder)
        return empty

    top = os.open(state, _OPEN_FOLDER)
    try:
        visit(top, "")
    finally:
        os.close(top)
    return kept


def plain_files(root: Path) -> dict[str, int]:
    """Every plain file under a folder by its path there, with its inode; links are not followed, and
    types and inodes come from the folder listings, so no file is stat-ed."""
    found: dict[str, int] = {}

    def walk(folder: int, prefix: str) -> None:
        with os.scandir(folder) as listing:
            entries = list(listing)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                inner = os.open(entry.name, _OPEN_FOLDER, dir_fd=folder)
                try:
                    walk(inner, prefix + entry.name + "/")
                finally:
                    os.close(inner)
            elif entry.is_file(follow_symlinks=False):
                found[prefix + entry.name] = entry.inode()

    try:
        top = os.open(root, _OPEN_FOLDER)
    except FileNotFoundError:
        return found
    try:
        walk(top, "")
    finally:
        os.close(top)
    return found


def is_plain(path: str, inode: int | None = None) -> bool:
    """Whether a path is a plain file (not a link), of the given inode if one is given."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and inode in (None, found.st_ino)
