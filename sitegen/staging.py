"""Atomic builds: render into a fresh folder beside the site, then swap the two folders in one step.

A build that fails, or is stopped at any point (an error, Ctrl-C, SIGKILL), leaves the
previous site exactly as it was; the next build works and takes up what a killed one left.
Outputs whose inputs did not change are not rendered again. The folder beside the site is
double-buffered: after a swap it holds the previous site, which is kept as the next build's
stage, checked against the published site (only hard links of its files at the same paths stay)
and brought up to date with what changed; files it lacks are linked (or copied) from the
published site, so every published site is whole.

The published files' inodes are recorded in the kept stage (not in the site: two builds of the
same content stay byte-identical) with the stamp of the manifest they belong to. While the published
manifest is the very file that build wrote, they are read from there; else (a site copied,
restored or moved in whole, whose inodes are new and may be other files' old numbers) from a
walk of the published site.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import itertools
import mmap
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from sitegen import memo, stage_check
from sitegen.cache import collector_paused
from sitegen.errors import InputError
from sitegen.parallel import Beside
from sitegen.phases import phase

MANIFEST = ".build-manifest"  # msgpack: each output's key and files
_OLD_MANIFEST = ".build-manifest.json"  # a site built by an earlier sitegen (rebuilt whole once)
_MANIFEST_VERSION = 3


class Stage:
    """A folder being filled with the next site; refuses paths that leave it.

    The folder may be the site before last, kept (see `staged`): it then holds only hard links of
    the published site's files (`kept`, by path and inode), and a file is never written in place,
    so a link shared with the published site is replaced, not written through. Each file written
    or linked is recorded with its inode, for the manifest the next build checks its stage by.
    """

    def __init__(self, root: Path, settle: Callable[[], tuple[Path, dict[str, int]]] | None = None) -> None:
        self.root = root.resolve()
        self._settle = settle  # waits for the kept stage's check: the root to use, and the files kept
        self._kept: dict[str, int] = {}
        self.written: dict[str, int] = {}  # files written by this build, with their inodes
        self.linked: dict[str, int] = {}  # files of the published site linked in (or copied), with their inodes
        self.removed: list[str] = []  # kept files removed, as the new site does not have them
        self._folders: set[str] = set()  # folders already checked and made: a site writes thousands of files into each

    @property
    def kept(self) -> dict[str, int]:
        """The files already here that are the published ones, by inode (each the same inode as the
        published file at its path); the kept stage's check is waited for the first time they are
        needed, which is before anything is written."""
        if self._settle is not None:
            root, self._kept = self._settle()
            self.root, self._settle = root.resolve(), None
        return self._kept

    def path(self, relative: str) -> Path:
        """The absolute path of a site-relative file, after checking it stays inside: a path of plain
        names (no "..", ".", empty part or leading "/"). Folders in it are made by _folder, which
        follows no link, so such a path cannot leave the stage."""
        if relative.startswith("/") or not set(relative.split("/")).isdisjoint(("", ".", "..")):
            raise InputError(relative, None, "refusing to write outside the output folder")
        return self.root / relative

    def _folder(self, folder: str) -> None:
        """Make a site folder (and the folders above it) once, in the stage: one that is there must be a
        folder, not a link (which could lead outside) or a file. Cheaper than resolving each new folder's
        path (six lstat calls and Python's realpath: 3 % of a cold build's rendering)."""
        if folder in self._folders or not folder:
            return
        self._folder(folder.rpartition("/")[0])
        path = f"{self.root}/{folder}"
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
        if folder not in self._folders or name in ("", ".", ".."):
            self.path(relative)
            self._folder(folder)
        target = f"{self.root}/{relative}"
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

    def reuse(self, relative: str, published: str) -> None:
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
        os.unlink(f"{self.root}/{relative}")
        del self.kept[relative]
        self.removed.append(relative)
        folder = relative.rpartition("/")[0]
        while folder:
            try:
                os.rmdir(f"{self.root}/{folder}")
            except OSError:  # not empty
                return
            self._folders.discard(folder)
            folder = folder.rpartition("/")[0]


class Publication:
    """What the previous build published, and what this build keeps, renders and drops.

    An output is a folder (a name ending in "/") or a file. A keyed output is
    rendered only when its key differs from the previous build's, or a file of it is missing.
    """

    def __init__(self, out: Path, record: _Record | None = None) -> None:
        self.out = out
        self.old, recorded = _read_published(out, record)  # output -> (key, files); the files' inodes as recorded
        self.walked = bool(self.old) and recorded is None
        # The published files by inode: as recorded while the manifest is its build's own, else as they are now.
        if self.walked:
            listed = {f for _, files in self.old.values() for f in files}
            recorded = {f: inode for f, inode in _plain_files(out).items() if f in listed}
        self.published = recorded or {}
        self.outputs: Manifest = {}  # the new site's outputs (set by `finish`)
        self.inodes: dict[str, int] = {}  # the new site's files by inode (set by `finish`)
        self.keys: dict[str, str] = {}
        self.rendered: set[str] = set()
        self.stage: Stage | None = None  # the stage this plan fills (set by `staged`)
        self.broken: set[str] | None = None  # with a checked stage, the outputs lacking a file in it (`lacking`)

    def kept_as_before(self, outputs: list[str]) -> set[str]:
        """Record for outputs made from the same inputs as in the previous build that build's keys (in one
        pass: a rebuild keeps most of 25,000 so); returns those it did not leave whole, to be keyed again."""
        kept = self.stage.kept if self.stage else {}
        published, broken, keys = self.old, self.broken, self.keys
        # As lacking found them, outputs are whole unless broken: known by set lookups, no call, for 25,000.
        whole = set() if broken is None else {o for o in outputs if o in published and o not in broken and published[o][1]}
        keys.update([(output, published[output][0]) for output in whole])
        again = set()
        for output in outputs:
            if output not in whole:
                old = published.get(output)
                if old is not None and old[1] and self._whole(output, old[1], kept):
                    keys[output] = old[0]
                else:
                    again.add(output)
        return again

    def changed(self, output: str, key: str) -> bool:
        """Whether an output's key is not the previous build's (known before the stage is checked; whether
        a current output is whole there is `unchanged`'s to say)."""
        old = self.old.get(output)
        return old is None or old[0] != key

    def forget(self, output: str) -> None:
        """Drop what the previous build published as `output` (found broken): it is made again, whatever its key."""
        self.old.pop(output, None)

    def unchanged(self, output: str, key: str) -> bool:
        """Record an output's key; True when the published one is current and whole, so it need not be rendered.

        Whole: each of its files is in the stage already (a hard link of the published file), or is
        the published site's plain file of the inode the manifest records (not a link a planted
        symlink could pull something outside the site through, nor a file put in its place).
        """
        self.keys[output] = key
        old = self.old.get(output)
        if old is not None and old[0] == key and old[1] and self._whole(output, old[1], self.stage.kept if self.stage else {}):
            return True
        self.rendered.add(output)
        return False

    def lacking(self, missing: list[str]) -> None:
        """Note the published files a checked stage lacks: an output none of whose files is among them is
        whole in the stage, known without looking up its files (25,000 outputs, 65,000 files). Only where
        the record vouches for the manifest, whose files it then holds every one of (a walked site's
        files may not be all the manifest names)."""
        if not self.walked:
            self.broken = {f if f in self.old else _folder_output(f, self.old) or f for f in missing}

    def _in_stage(self, output: str, files: list[str], kept: dict[str, int]) -> bool:
        """Whether each of an output's files is in the stage."""
        return output not in self.broken if self.broken is not None else all(map(kept.__contains__, files))

    def _whole(self, output: str, files: list[str], kept: dict[str, int]) -> bool:
        """Whether each of an output's files is in the stage or published as recorded."""
        return self._in_stage(output, files, kept) or all(f in kept or self._plain(f) for f in files)

    def _plain(self, relative: str) -> bool:
        """Whether the published file is still the plain file the manifest records (or, walked, is there)."""
        if self.walked:
            return relative in self.published
        try:
            found = os.lstat(f"{self.out}/{relative}")
        except OSError:
            return False
        return stat.S_ISREG(found.st_mode) and found.st_ino == self.published[relative]

    def add(self, stage: Stage, part: Recorded) -> None:
        """Take into the build's records what a part of it wrote and keyed apart (`recorded`)."""
        stage.written.update(part.written)
        self.keys.update(part.keys)
        self.rendered.update(part.rendered)

    @property
    def reused(self) -> int:
        return len(self.keys) - len(self.rendered & set(self.keys))

    def finish(self, stage: Stage) -> None:
        """Bring the reused outputs' files into the stage (those it lacks), remove the kept files the new
        site does not have, and write the manifest of the whole new site."""
        outputs: dict[str, tuple[str, list[str]]] = {}
        kept = stage.kept  # (the stage's own dict: its removals below show in it)
        for output, key in self.keys.items():
            if output not in self.rendered:
                files = self.old[output][1]
                if not self._in_stage(output, files, kept):
                    for relative in files:
                        if relative not in kept:
                            stage.reuse(relative, f"{self.out}/{relative}")
                outputs[output] = (key, files)
        written = stage.written
        for relative in sorted(written):
            # A file inside a keyed folder is that folder's, not an output of its own (by its parent
            # folders, looked up: matching every file against every folder grew as runs squared).
            output = relative if relative in self.keys else _folder_output(relative, self.keys) or relative
            outputs.setdefault(output, (self.keys.get(output, ""), []))[1].append(relative)
        for output, (_, files) in self.old.items():  # kept files of outputs rendered again or gone
            if output not in outputs or output in self.rendered:
                for relative in files:
                    if relative in kept and relative not in written:
                        stage.remove(relative)
        # Every file of the new site, by inode: the kept files left (the others were removed), then
        # those linked in and those written, which replace kept ones at their paths.
        self.inodes = {**stage.kept, **stage.linked, **stage.written}
        manifest = _ManifestFile(_MANIFEST_VERSION, dict(sorted(outputs.items())))
        stage.write(MANIFEST, msgspec.msgpack.encode(manifest))
        self.outputs = manifest.outputs


class Recorded(msgspec.Struct, array_like=True):
    """What a part of a build wrote and keyed, kept apart from the build's records: a forked process
    hands it back so (`recorded`, then `Publication.add`)."""

    written: dict[str, int]
    keys: dict[str, str]
    rendered: list[str]


def recorded(stage: Stage, plan: Publication, work: Callable[[], None]) -> Recorded:
    """Run `work` and return what it wrote into the stage and keyed in the plan, leaving the build's own records as they were."""
    saved = stage.written, plan.keys, plan.rendered
    stage.written, plan.keys, plan.rendered = {}, {}, set()
    try:
        work()
        return Recorded(stage.written, plan.keys, sorted(plan.rendered))
    finally:
        stage.written, plan.keys, plan.rendered = saved


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
    if out.is_dir() and not any((out / name).is_file() for name in (MANIFEST, _OLD_MANIFEST)) and any(out.iterdir()):
        raise InputError(out, None, f"refusing to replace a folder that sitegen did not build (no {MANIFEST}); empty it or choose another --out")


@contextmanager
def staged(out: Path, sources: list[Path]) -> Iterator[tuple[Stage, Publication]]:
    """Yield a stage and the publication plan; publish on success, discard on any error.

    The stage is the site before last where one is kept beside the site (the swap leaves it there),
    checked file by file against the published manifest, so a build writes only what changed; else
    a fresh folder. The check runs in a forked process while the build reads its runs, and is
    waited for when the plan first needs it. A file system error (a full disk, an unwritable
    folder) is one InputError line, and the previous site stays.
    """
    try:
        out = out.resolve()
    except (OSError, RuntimeError) as exc:
        raise InputError(out, None, f"cannot use this output folder: {exc}") from None
    check_output(out, sources)
    stage_lock = tmp = check = None
    checked: dict[str, int] = {}  # the published files' inodes the stage is checked against
    found = stage_check.Checked([], {}, [])  # the check's findings: the stage's folders by snapshot, and those it changed
    adopted = False

    def settle() -> tuple[Path, dict[str, int]]:
        """The checked stage's folder and files; a stage that could not be checked is not used: removed,
        and a fresh one made."""
        nonlocal tmp, stage_lock, adopted, found
        assert check is not None and tmp is not None and stage_lock is not None
        with phase("stage: check (waited for)"):
            result = msgspec.msgpack.decode(check.result(), type=stage_check.Checked | None)
        if result is not None and checked is publication.published:  # (not when the manifest was refused since)
            found = result
            publication.lacking(result.missing)
            return tmp, _without(publication.published, result.missing)
        shutil.rmtree(tmp, ignore_errors=True)
        os.close(stage_lock)
        tmp = stage_lock = None
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-build-", dir=out.parent))
        stage_lock, adopted = _lock(tmp), False
        return tmp, {}

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with phase("stage: adopt"), _locked_folder(out.parent):  # no other build cleans up this stage before it is locked
            _clean_up(out)
            record = _recorded(out)
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-build-", dir=out.parent))
            stage_lock = _lock(tmp)
            held = _adopt(_kept_stage(out), tmp)
            if held is not None:  # the lock moved with the kept stage's folder
                os.close(stage_lock)
                stage_lock, adopted = held, True
                if record is not None:  # checked from the record while the manifest is decoded
                    check, checked = Beside(functools.partial(_checked, tmp, record.files, record)), record.files
            publication = Publication(out, record)
            if held is not None and check is None:
                check, checked = Beside(functools.partial(_checked, tmp, publication.published, None)), publication.published
        stage = publication.stage = Stage(tmp, settle if check else None)
        yield stage, publication
        with phase("stage: link, manifest"):
            publication.finish(stage)
        with phase("stage: folder snapshots"):
            folders = stage_check.retaken(str(stage.root), found.folders, _changed_folders(stage, found.changed))
            # The record of the site about to be published: its manifest's stamp is taken in the stage, as
            # another build could swap its own site in just after this one.
            kept = _record(stage.root, publication.inodes, folders, record if record is not None and publication.published is record.files else None)
        os.chmod(stage.root, 0o755)
        with phase("stage: swap"):
            _swap(stage.root, out)
            _record_inodes(stage.root, kept.stored)
            memo.remember(out / MANIFEST, (publication.outputs, kept))
        adopted = True  # the stage holds the previous site now: kept for the next build
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise InputError(out, None, f"cannot write the site: {exc.strerror or exc}{where}; the previous site is kept") from None
    finally:
        if check is not None:
            check.stop()  # a build that failed before it needed the check: the folder is left to no one else
        if tmp is not None:
            _keep_or_remove(tmp, out, adopted)
        if stage_lock is not None:
            os.close(stage_lock)


def _checked(root: Path, published: dict[str, int], record: _Record | None) -> bytes:
    """The kept stage's check (stage_check.check) as msgpack; `record`, where the published site's build
    left one, holds the stage as its own build published it. Nil where the stage cannot be checked
    (an entry that cannot be read or removed)."""
    files, folders = ({}, {}) if record is None else (
        msgspec.msgpack.decode(record.stored.stage_files, type=dict[str, int]),
        msgspec.msgpack.decode(record.stored.stage_folders, type=stage_check.Folders))
    try:
        return msgspec.msgpack.encode(stage_check.check(str(root), published, files, folders))
    except OSError:
        return msgspec.msgpack.encode(None)


def _changed_folders(stage: Stage, checked: list[str]) -> set[str]:
    """The folders of the stage a build wrote, linked or removed files in, and those its check changed."""
    paths = itertools.chain(stage.written, stage.linked, stage.removed)
    return {path.rpartition("/")[0] for path in paths} | set(checked)


def _without(files: dict[str, int], missing: list[str]) -> dict[str, int]:
    """The files, by inode, less the missing ones."""
    kept = dict(files)
    for relative in missing:
        del kept[relative]
    return kept


def _kept_stage(out: Path) -> Path:
    """Where the site before last waits, beside the site, to be the next build's stage."""
    return out.parent / f".{out.name}-stage"


def _adopt(kept: Path, tmp: Path) -> int | None:
    """Move the kept stage (if any, and no other build holds it) onto the empty, locked stage folder;
    returns the descriptor that holds its lock, None when nothing was adopted."""
    try:
        descriptor = _lock(kept)
    except OSError:  # none kept, or a build running now holds it
        return None
    try:
        os.replace(kept, tmp)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def _plain_files(root: Path) -> dict[str, int]:
    """Every plain file under a folder by its path there, with its inode; links are not followed, and
    types and inodes come from the folder listings, so no file is stat-ed."""
    found: dict[str, int] = {}

    def walk(folder: int, prefix: str) -> None:
        with os.scandir(folder) as listing:
            entries = list(listing)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                inner = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
                try:
                    walk(inner, prefix + entry.name + "/")
                finally:
                    os.close(inner)
            elif entry.is_file(follow_symlinks=False):
                found[prefix + entry.name] = entry.inode()

    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return found
    try:
        walk(top, "")
    finally:
        os.close(top)
    return found


def _keep_or_remove(tmp: Path, out: Path, keep: bool) -> None:
    """After a build: keep its stage folder beside the site for the next build (when it holds the
    previous site, or a stage adopted from one: the next build checks it), else remove it."""
    kept = _kept_stage(out)
    if keep and not kept.exists():
        with phase("stage: keep"):
            try:
                os.replace(tmp, kept)
                return
            except OSError:
                pass
    with phase("stage: delete old site"):
        shutil.rmtree(tmp, ignore_errors=True)


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
    """Deal with what builds that were killed left beside the site: put back an old site left aside,
    keep one stage folder as the next stage (it is checked before use), remove the others."""
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
            _keep_or_remove(leftover, out, keep=True)
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


Manifest = dict[str, tuple[str, list[str]]]  # output -> (key, its files)


class _ManifestFile(msgspec.Struct, array_like=True):
    version: int
    outputs: Manifest = {}


def _read_published(out: Path, record: _Record | None) -> tuple[Manifest, dict[str, int] | None]:
    """The previous build's outputs, each with its key and files, and that build's record of its
    files' inodes (`record`, read by _recorded) where it belongs to this very manifest file; no
    outputs when the manifest is missing, unreadable or of another version.

    A manifest its record vouches for holds the bytes its build wrote, so it is not checked again
    (at 10,000 runs the check costs 100 ms); any other is refused if it names a file that would
    leave the output folder or is not inside the output that claims it.
    """
    remembered = memo.recall(out / MANIFEST)  # what this process published last, while it is still there
    if remembered is not None:
        return remembered[0], remembered[1].files  # type: ignore[index]
    try:
        with open(os.open(out / MANIFEST, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as file:
            found = os.fstat(file.fileno())
            data = mapped(file.fileno())
        with collector_paused():
            manifest = msgspec.msgpack.decode(data, type=_ManifestFile)
    except (OSError, ValueError):  # msgspec's DecodeError is a ValueError, as mmap's refusal of an empty file is
        return {}, None
    if manifest.version != _MANIFEST_VERSION:
        return {}, None
    inodes = record.files if record is not None and record.manifest == (found.st_ino, found.st_ctime_ns) else None
    if inodes is None and not _well_formed(manifest.outputs):
        return {}, None
    return manifest.outputs, inodes


def _well_formed(outputs: Manifest) -> bool:
    """Whether every file of the manifest is inside the output folder, inside the output that claims it
    and claimed by one output only."""
    for output, (_, files) in outputs.items():
        if files != [output] and not (output.endswith("/") and all(map(str.startswith, files, itertools.repeat(output)))):
            return False
    names = [f for _, files in outputs.values() for f in files]
    return len(set(names)) == len(names) and _all_inside(names)


_NOTHING = msgspec.Raw(msgspec.msgpack.encode({}))


class _InodesFile(msgspec.Struct, array_like=True):
    """The record a build leaves in the kept stage: the site it published, its files by inode and its
    folders by snapshot (stage_check), and the site before it, which the kept stage holds, as that was
    published. Kept as msgpack until needed: the check decodes the stage's part, in its own process."""

    manifest: tuple[int, int]  # the manifest file's inode and change time (which no one can set)
    files: msgspec.Raw
    folders: msgspec.Raw = _NOTHING
    stage_files: msgspec.Raw = _NOTHING
    stage_folders: msgspec.Raw = _NOTHING


class _Record(msgspec.Struct):
    """A build's record as read, with the published files decoded."""

    stored: _InodesFile
    files: dict[str, int]

    @property
    def manifest(self) -> tuple[int, int]:
        return self.stored.manifest


_INODES = ".published-inodes"  # in the kept stage: the published site's files by inode


def _manifest_stamp(out: Path) -> tuple[int, int]:
    found = os.lstat(out / MANIFEST)
    return (found.st_ino, found.st_ctime_ns)


def _recorded(out: Path) -> _Record | None:
    """The published files' inodes as their build recorded them (in the kept stage, so read before it
    is adopted); None unless that build's manifest is the one published now, by its stamp (not a copy,
    nor another build's). A process that published the site itself remembers the record."""
    remembered = memo.recall(out / MANIFEST)
    if remembered is not None:
        return remembered[1]  # type: ignore[index]
    try:
        manifest = _manifest_stamp(out)
        with open(_kept_stage(out) / _INODES, "rb") as file:
            found = msgspec.msgpack.decode(mapped(file.fileno()), type=_InodesFile)
        return _Record(found, msgspec.msgpack.decode(found.files, type=dict[str, int])) if found.manifest == manifest else None
    except (OSError, ValueError):  # msgspec's DecodeError is a ValueError, as mmap's refusal of an empty file is
        return None


def mapped(descriptor: int) -> mmap.mmap:
    """A build file's bytes mapped, not read (the manifest, the record and the cache's record files: 7,
    10 and 47 MB at 10,000 runs), as a fresh process pays for every page it copies them into; what
    is left undecoded of them refers to the map. ValueError for an empty file. Builds replace these
    files, never write them in place; a tool that truncated one in place while a build read it would
    stop that build (SIGBUS), not publish a wrong site."""
    return mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)


def _record_inodes(stage: Path, record: _InodesFile) -> None:
    """Leave the record of the site just published for the next build, in the folder that held the
    stage and now holds the previous site: kept as the next build's stage, which reads the record
    before the check removes it with the other files the site does not have. The site is published
    already: where the record cannot be written (a full disk, or a first build, which leaves no
    folder behind), there is none, and the next build walks the site instead."""
    partial = stage / (_INODES + ".partial")
    try:
        with open(partial, "wb") as file:
            file.writelines(_pieces(record))
        os.replace(partial, stage / _INODES)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()


def _pieces(record: _InodesFile) -> list[bytes | msgspec.Raw]:
    """The record's msgpack in pieces, its parts kept as msgpack written as they are: 8 of its 10 MB at
    10,000 runs are the previous record's, and joining them first costs a fresh 10 MB buffer. An
    array_like struct is a msgpack array; one of fewer than 16 fields (this one's 5) has a one-byte header."""
    values = msgspec.structs.astuple(record)
    return [bytes([0x90 | len(values)])] + [v if isinstance(v, msgspec.Raw) else msgspec.msgpack.encode(v) for v in values]


def _record(site: Path, published: dict[str, int], folders: stage_check.Folders, before: _Record | None) -> _Record:
    """The record of the site in the folder `site`, with the site before it (`before`, the record the
    build started from, where it vouched for the stage the build's check used) as that was published."""
    encode = msgspec.msgpack.encode
    stored = _InodesFile(_manifest_stamp(site), msgspec.Raw(encode(published)), msgspec.Raw(encode(folders)),
                         *((before.stored.files, before.stored.folders) if before is not None else ()))
    return _Record(stored, published)


def _folder_output(relative: str, outputs: dict[str, str]) -> str | None:
    """The folder output a file belongs to ("runs/x/" for "runs/x/index.html"), if any."""
    parts = relative.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth]) + "/"
        if folder in outputs:
            return folder
    return None


# What a NUL-framed path must not hold: a backslash, an empty part (absolute, "a//b", "a/"),
# an empty path, or a "." or ".." part.
_OUTSIDE = ("\\", "\0/", "//", "/\0", "\0\0", *(a + dots + b for dots in (".", "..") for a in "\0/" for b in "\0/"))


def _all_inside(paths: list[str]) -> bool:
    """Whether every manifest path names a file strictly inside the output folder.

    Checked as text (no "..", not absolute), all paths joined in one string searched for each bad
    pattern: 10 ms for a 10,000-run site's 65,000 paths, where a regular expression took 125.
    """
    joined = "\0" + "\0".join(paths) + "\0"
    return bool(paths) and joined.count("\0") == len(paths) + 1 and not any(bad in joined for bad in _OUTSIDE)
