"""Writing into the stage: the folder a build fills with the next site, refusing paths that leave it."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from sitegen.errors import InputError
from sitegen.publish.layout import is_bookkeeping, state_file


class Stage:
    """A folder being filled with the next site; refuses paths that leave it.

    The folder may be the site before last, kept (see `staged`): it then holds only hard links of
    the published site's files (`kept`, by path and inode), and a file is never written in place,
    so a link shared with the published site is replaced, not written through. Each file written
    or linked is recorded with its inode, for the manifest the next build checks its stage by.
    Bookkeeping files (a path starting with ".") go to the next state folder (`state`), never into
    the site; a hidden name deeper in a path is refused, so the site holds no hidden file. The state
    folder is double-buffered like the stage: the files it keeps (`state_kept`) are hard links of the
    published state's, by their paths in the plan.
    """

    def __init__(self, root: Path, settle: Callable[[], tuple[Path, dict[str, int]]] | None = None, state: Path | None = None,
                 state_kept: dict[str, int] | None = None) -> None:
        self.root = root.resolve()
        self.state = state.resolve() if state is not None else None
        self._settle = settle  # waits for the kept stage's check: the root to use, and the files kept
        self._kept: dict[str, int] = dict(state_kept or {})
        self.written: dict[str, int] = {}  # files written by this build, with their inodes
        self.linked: dict[str, int] = {}  # files of the published site linked in (or copied), with their inodes
        self.removed: list[str] = []  # kept files removed, as the new site does not have them
        self.bookkeeping: set[str] = set(self._kept)  # the bookkeeping files among those kept, written and linked
        self._folders: set[str] = set()  # folders already checked and made: a site writes thousands of files into each

    @property
    def kept(self) -> dict[str, int]:
        """The files already here that are the published ones, by inode (each the same inode as the
        published file at its path); the kept stage's check is waited for the first time they are
        needed, which is before anything is written."""
        if self._settle is not None:
            root, found = self._settle()
            found.update(self._kept)  # the state folder's
            self.root, self._kept, self._settle = root.resolve(), found, None
        return self._kept

    def path(self, relative: str) -> Path:
        """The absolute path of a file of the plan, after checking it stays inside: a path of plain
        names (no "..", ".", empty part or leading "/"), none hidden but a bookkeeping file's first.
        Folders in it are made by _folder, which follows no link, so such a path cannot leave the stage."""
        if relative.startswith("/") or not set(relative.split("/")).isdisjoint(("", ".", "..")):
            raise InputError(relative, None, "refusing to write outside the output folder")
        if "/." in relative or (is_bookkeeping(relative) and self.state is None):
            raise InputError(relative, None, "refusing to write a hidden file into the site")
        return Path(self._where(relative))

    def _where(self, relative: str) -> str:
        """Where a file or folder of the plan is written: in the stage, or a bookkeeping one in the state folder."""
        return state_file(self.state, relative) if is_bookkeeping(relative) and self.state is not None else f"{self.root}/{relative}"

    def _folder(self, folder: str) -> None:
        """Make a site folder (and the folders above it) once, in the stage: one that is there must be a
        folder, not a link (which could lead outside) or a file. Cheaper than resolving each new folder's
        path (six lstat calls in Python's realpath for each)."""
        if folder in self._folders or not folder:
            return
        self._folder(folder.rpartition("/")[0])
        path = self._where(folder)
        try:
            os.mkdir(path)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                raise InputError(folder, None, "refusing to write outside the output folder (a link or file stands where a folder goes)") from None
        self._folders.add(folder)

    def _target(self, relative: str, replace: bool = True) -> str:
        """Where a file goes, its folder made and (with `replace`) the file it replaces removed: the
        path checked and its folder made once, then the file opened by its name alone."""
        if self._settle is not None:
            self.kept  # the kept stage's check settles (and may give another root) before anything is written
        folder, _, name = relative.rpartition("/")
        if folder not in self._folders or name in ("", ".", "..") or name[0] == ".":
            self.path(relative)
            self._folder(folder)
        if is_bookkeeping(relative):
            self.bookkeeping.add(relative)
        target = self._where(relative)
        if replace:
            try:
                os.unlink(target)  # a link (to a published file, or planted) is removed, never followed
            except FileNotFoundError:
                pass
        return target

    def write(self, relative: str, data: bytes | str) -> None:
        self.write_pieces(relative, (data.encode() if isinstance(data, str) else data,))

    def write_pieces(self, relative: str, pieces: Iterable[bytes]) -> None:
        """Write a file made of pieces, each written as it comes (a large file needs no buffer of its size)."""
        # O_EXCL and O_NOFOLLOW: a link planted where a file goes is refused, not written through. Only a
        # kept file is removed first; a file found where none was (planted since the check) is removed then.
        target = self._target(relative, replace=relative in self.kept)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            descriptor = os.open(target, flags, 0o644)
        except FileExistsError:
            os.unlink(target)
            descriptor = os.open(target, flags, 0o644)
        try:
            for piece in pieces:
                left = memoryview(piece)  # through the descriptor: no file object for each file
                while left:
                    left = left[os.write(descriptor, left):]
            self.written[relative] = os.fstat(descriptor).st_ino
        finally:
            os.close(descriptor)

    def copy(self, relative: str, source: Path) -> None:
        target = self._target(relative)
        shutil.copyfile(source, target)
        self.written[relative] = os.lstat(target).st_ino

    def reuse(self, relative: str, published: Path) -> None:
        """A file of the previous site, unchanged: hard-linked (files are never rewritten in place), else
        copied; refused if what is there now is not a plain file (it was swapped while this build ran)."""
        target = self._target(relative)
        try:
            os.link(published, target, follow_symlinks=False)
        except OSError:
            shutil.copyfile(published, target, follow_symlinks=False)
        found = os.lstat(target)
        if not stat.S_ISREG(found.st_mode):
            raise InputError(published, None, "changed into something other than a file while the site was built; build again")
        self.linked[relative] = found.st_ino

    def remove(self, relative: str) -> None:
        """Remove a kept file the new site no longer has, and the folders it leaves empty."""
        os.unlink(self._where(relative))
        del self.kept[relative]
        self.removed.append(relative)
        folder = relative.rpartition("/")[0]
        while folder:
            try:
                os.rmdir(self._where(folder))
            except OSError:  # not empty
                return
            self._folders.discard(folder)
            folder = folder.rpartition("/")[0]


