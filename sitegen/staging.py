"""Atomic builds: render into a fresh folder beside the site, then swap the two folders in one step.

A build that fails, or is stopped at any point (an error, Ctrl-C, SIGKILL), leaves the
previous site exactly as it was; the next build works and removes what a killed one left.
Outputs whose inputs did not change are not rendered again: their files are linked (or
copied) from the previous site into the new folder, so every published site is whole.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sitegen.errors import InputError

MANIFEST = ".build-manifest.json"
_MANIFEST_VERSION = 2


class Stage:
    """A folder being filled with the next site; refuses paths that leave it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.written: list[str] = []
        self._folders: set[str] = set()  # folders already checked and made: a site writes thousands of files into each

    def path(self, relative: str) -> Path:
        """The absolute path of a site-relative file, after checking it stays inside."""
        target = (self.root / relative).resolve()
        if target != self.root and self.root not in target.parents:
            raise InputError(relative, None, "refusing to write outside the output folder")
        return target

    def _target(self, relative: str) -> str:
        """Where a file goes, its folder made: resolved and checked once per folder, then by its name alone."""
        folder, _, name = relative.rpartition("/")
        if folder not in self._folders or name in ("", ".", ".."):
            self.path(relative).parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(folder)
        return f"{self.root}/{relative}"

    def write(self, relative: str, data: bytes | str) -> None:
        target = self._target(relative)
        # O_NOFOLLOW: a link planted where a file goes is refused, not written through.
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with open(descriptor, "wb") as file:
            file.write(data.encode() if isinstance(data, str) else data)
        self.written.append(relative)

    def copy(self, relative: str, source: Path) -> None:
        shutil.copyfile(source, self._target(relative))
        self.written.append(relative)

    def reuse(self, relative: str, published: Path | str) -> None:
        """A file of the previous site, unchanged: hard-linked (files are never rewritten in place), else copied."""
        target = self._target(relative)
        try:
            os.link(published, target, follow_symlinks=False)
        except OSError:
            shutil.copyfile(published, target)
        self.written.append(relative)


class Publication:
    """What the previous build published, and what this build keeps, renders and drops.

    An output is a folder (a name ending in "/") or a file. A keyed output is
    rendered only when its key differs from the previous build's, or a file of it is missing.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.old, self.old_files = _read_manifest(out)
        self.keys: dict[str, str] = {}
        self.rendered: set[str] = set()

    def unchanged(self, output: str, key: str) -> bool:
        """Record an output's key; True when the published one is current and whole, so it need not be rendered."""
        self.keys[output] = key
        files = self.old_files.get(output)
        if self.old.get(output) == key and files and all(_regular_file(f"{self.out}/{f}") for f in files):
            return True
        self.rendered.add(output)
        return False

    @property
    def reused(self) -> int:
        return len(self.keys) - len(self.rendered & set(self.keys))

    def finish(self, stage: Stage) -> None:
        """Bring the reused outputs' files into the stage and write the manifest of the whole new site."""
        for output in self.keys:
            if output not in self.rendered:
                for relative in self.old_files[output]:
                    stage.reuse(relative, f"{self.out}/{relative}")
        outputs = {**{path: "" for path in stage.written}, **self.keys}
        # A file inside a keyed folder is that folder's, not an output of its own (by its parent
        # folders, looked up: matching every file against every folder grew as runs squared).
        outputs = {k: v for k, v in outputs.items() if k in self.keys or _folder_output(k, self.keys) is None}
        manifest = {"version": _MANIFEST_VERSION, "outputs": outputs, "files": sorted(set(stage.written))}
        stage.root.joinpath(MANIFEST).write_text(json.dumps(manifest, sort_keys=True, indent=0))


def check_output(out: Path, sources: list[Path]) -> None:
    """Refuse an output folder that a build would destroy something in.

    A build replaces its output folder whole, so it must be empty or a site
    sitegen built (it has a manifest), and it must not hold or sit in an input.
    """
    if out.exists() and not out.is_dir():
        raise InputError(out, None, "the output path exists and is not a folder")
    for source in sources:
        source = source.resolve()
        if out == source or out in source.parents or source in out.parents:
            raise InputError(out, None, f"the output folder overlaps the input folder {source}; choose another --out")
    if out.is_dir() and not (out / MANIFEST).is_file() and any(out.iterdir()):
        raise InputError(out, None, f"refusing to replace a folder that sitegen did not build (no {MANIFEST}); empty it or choose another --out")


@contextmanager
def staged(out: Path, sources: list[Path]) -> Iterator[tuple[Stage, Publication]]:
    """Yield a stage and the publication plan; publish on success, discard on any error.

    A file system error (a full disk, an unwritable folder) is one InputError line, and the
    previous site stays.
    """
    try:
        out = out.resolve()
    except (OSError, RuntimeError) as exc:
        raise InputError(out, None, f"cannot use this output folder: {exc}") from None
    check_output(out, sources)
    stage_lock = tmp = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with _locked_folder(out.parent):  # no other build cleans up this stage before it is locked
            _clean_up(out)
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-build-", dir=out.parent))
            stage_lock = _lock(tmp)
        publication = Publication(out)
        stage = Stage(tmp)
        yield stage, publication
        publication.finish(stage)
        os.chmod(stage.root, 0o755)
        _swap(stage.root, out)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise InputError(out, None, f"cannot write the site: {exc.strerror or exc}{where}; the previous site is kept") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if stage_lock is not None:
            os.close(stage_lock)


def _swap(stage: Path, out: Path) -> None:
    """Put the stage in the site's place in one step: the two folders trade names (the old site ends up in the stage).

    Where the file system cannot exchange names, two renames do it, and a build killed between
    them leaves the old site aside, which the next build puts back (`_clean_up`).
    """
    if not out.exists():
        os.replace(stage, out)
        return
    if _exchange(stage, out):
        return
    aside = out.parent / f".{out.name}-old-{os.getpid()}"
    os.replace(out, aside)
    os.replace(stage, out)
    os.replace(aside, stage)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    renameat2 = getattr(_LIBC, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


_LIBC = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _clean_up(out: Path) -> None:
    """Remove the folders builds that were killed left beside the site; put back an old site left aside."""
    for leftover in sorted(out.parent.glob(f".{out.name}-old-*")):
        if not out.exists():
            os.replace(leftover, out)
        else:
            shutil.rmtree(leftover, ignore_errors=True)
    for leftover in out.parent.glob(f".{out.name}-build-*"):
        try:
            descriptor = _lock(leftover)
        except OSError:  # a build running now holds it (or it is gone)
            continue
        try:
            shutil.rmtree(leftover, ignore_errors=True)
        finally:
            os.close(descriptor)


def _lock(folder: Path) -> int:
    """An exclusive lock on a folder, held as long as the returned descriptor is open; OSError if taken."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        raise
    return descriptor


@contextmanager
def _locked_folder(folder: Path) -> Iterator[None]:
    """Hold a (blocking) exclusive lock on a folder for the block."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _read_manifest(out: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The previous build's outputs and the files of each; entries that would leave the output folder are dropped."""
    try:
        found = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}, {}
    if not isinstance(found, dict) or found.get("version") != _MANIFEST_VERSION:
        return {}, {}
    outputs, files = found.get("outputs"), found.get("files")
    if not isinstance(outputs, dict) or not isinstance(files, list):
        return {}, {}
    outputs = {k: v for k, v in outputs.items() if isinstance(k, str) and isinstance(v, str) and _inside(k)}
    by_output: dict[str, list[str]] = {}
    for relative in files:
        if isinstance(relative, str) and _inside(relative):
            output = relative if relative in outputs else _folder_output(relative, outputs)
            if output:
                by_output.setdefault(output, []).append(relative)
    return outputs, by_output


def _regular_file(path: str) -> bool:
    """A plain file, not a link a planted symlink could pull something outside the site through."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _folder_output(relative: str, outputs: dict[str, str]) -> str | None:
    """The folder output a file belongs to ("runs/x/" for "runs/x/index.html"), if any."""
    parts = relative.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth]) + "/"
        if folder in outputs:
            return folder
    return None


def _inside(relative: str) -> bool:
    """Whether a manifest path names something strictly inside the output folder.

    Checked as text (no "..", not absolute): cheap for thousands of entries.
    """
    if not relative or "\\" in relative or relative.startswith("/"):
        return False
    parts = [part for part in relative.split("/") if part]
    return bool(parts) and ".." not in parts and parts[0] != "."
