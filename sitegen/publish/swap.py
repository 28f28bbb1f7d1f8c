"""Atomic builds: render into a folder beside the site, then swap the two folders in one step.

A build that fails, or is stopped at any point (an error, Ctrl-C, SIGKILL), leaves the
previous site exactly as it was; the next build works and takes up what a killed one left,
once the processes that build forked have ended.
This module is the lifecycle: take the stage and the state folder (each the one before last,
kept in the work folder beside the site (layout) and checked before use: stage_check), hand
them to the build with its plan (publication), then publish: swap the site in, then its state,
and keep what they replaced for the next build. The stage is double-buffered: after a swap it
holds the previous site, which the next build brings up to date with what changed, so every
published site is whole and a rebuild writes what changed. Writing into the stage is stage.py's
job, the manifest and the inode record manifest.py's.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from sitegen.errors import InputError
from sitegen.publish import layout, stage_check
from sitegen.publish.layout import is_bookkeeping, state_file
from sitegen.publish.manifest import MANIFEST, Record, new_record, read_record, record_inodes
from sitegen.publish.stage import Stage
from sitegen.rebuild.plan import Publication
from sitegen.serve import memo
from sitegen.support.parallel import Beside
from sitegen.support.phases import phase


def check_output(out: Path, work: Path, sources: list[Path]) -> None:
    """Refuse an output folder that a build would destroy something in.

    A build replaces its output folder whole, so it must be empty or a site sitegen built (its
    work folder `work` is beside it, or, built by an earlier sitegen, it holds a manifest), and it
    must not hold or sit in an input.
    """
    if out.exists() and not out.is_dir():
        raise InputError(out, None, "the output path exists and is not a folder")
    for source in sources:
        source = source.resolve()
        if out == source or out in source.parents or source in out.parents:
            raise InputError(out, None, f"the output folder overlaps the input folder {source}; choose another --out")
    if out.is_dir() and not work.is_dir() and not any((out / name).is_file() for name in layout.EARLIER_MANIFESTS) and any(out.iterdir()):
        raise InputError(out, None, f"refusing to replace a folder that sitegen did not build (no {work.name}/ beside it); empty it or choose another --out")


@contextmanager
def staged(out: Path, sources: list[Path]) -> Iterator[tuple[Stage, Publication]]:
    """Yield a stage and the publication plan; publish on success, discard on any error.

    The stage is the site before last where one is kept in the work folder (the swap leaves it
    there), checked file by file against the published manifest, so a build writes only what
    changed; else a fresh folder. The check runs in a forked process while the build reads its runs,
    and is waited for when the plan first needs it. The bookkeeping goes into the state before last
    (kept the same way, `_take_state`), swapped in after the site. A file system error (a full disk,
    an unwritable folder) is one InputError line, and the previous site stays.
    """
    try:
        out = out.resolve()
    except (OSError, RuntimeError) as exc:
        raise InputError(out, None, f"cannot use this output folder: {exc}") from None
    work = layout.work_folder(out)
    check_output(out, work, sources)
    stage_lock = tmp = check = state_lock = state = None
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
        tmp, stage_lock = _locked_temporary(work, "build-")
        adopted = False
        return tmp, {}

    try:
        work.mkdir(parents=True, exist_ok=True)
        with phase("stage: wait for a killed build's processes"):
            _await_killed(work)
        with phase("stage: adopt"), _locked_folder(work):  # no other build cleans up this stage before it is locked
            _clean_up(out, work)
            published = work / layout.STATE
            trusted = layout.describes(published, out)
            record = read_record(published) if trusted else None
            tmp, stage_lock = _locked_temporary(work, "build-")
            state, state_lock, state_kept = _take_state(work, published, trusted)
            held = _adopt(work / layout.KEPT_STAGE, tmp)
            if held is not None:  # the lock moved with the kept stage's folder
                os.close(stage_lock)
                stage_lock, adopted = held, True
                if record is not None:  # checked from the record while the manifest is decoded
                    check, checked = Beside(functools.partial(_checked, tmp, record.files, record)), record.files
            publication = Publication(out, published, record, trusted)
            if held is not None and check is None:
                check, checked = Beside(functools.partial(_checked, tmp, publication.published, None)), publication.published
        stage = publication.stage = Stage(tmp, settle if check else None, state, state_kept)
        yield stage, publication
        with phase("stage: link, manifest"):
            publication.finish(stage)
        with phase("stage: folder snapshots"):
            folders = stage_check.retaken(str(stage.root), found.folders, _changed_folders(stage, found.changed))
            # The record of the site about to be published, with its manifest's stamp.
            kept = new_record(state, publication.inodes, folders, record if record is not None and publication.published is record.files else None)
            record_inodes(state, kept.stored)
        os.chmod(stage.root, 0o755)
        with phase("stage: swap"), _locked_folder(work):  # no other build swaps its site or state in between
            _swap(stage.root, out, work / f"old-{os.getpid()}")
            adopted = True  # the stage holds the previous site now: kept for the next build
            if _publish_state(state, stage_lock, published, work):  # (the previous state is in `state` now)
                memo.remember(Path(state_file(published, MANIFEST)), (publication.outputs, kept))
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise InputError(out, None, f"cannot write the site: {exc.strerror or exc}{where}; the previous site is kept") from None
    finally:
        if check is not None:
            check.stop()  # a build that failed before it needed the check: the folder is left to no one else
        if tmp is not None:
            _keep_or_remove(tmp, work / layout.KEPT_STAGE, adopted)
        if state is not None:
            _keep_or_remove(state, work / layout.KEPT_STATE, keep=True)  # checked when taken again
        for descriptor in (stage_lock, state_lock):
            if descriptor is not None:
                os.close(descriptor)


def _publish_state(state: Path, site: int, published: Path, work: Path) -> bool:
    """Put the state folder of the site just swapped in (open as `site`) in place of the previous one, with
    the site folder's stamp; False where that failed. The site is published already: the previous state
    then stays, whose stamp is another folder's, so the next build trusts none and builds the site whole."""
    try:
        layout.write_stamp(state, site)
        _swap(state, published, work / f"state-old-{os.getpid()}")
    except OSError:
        return False
    return True


def _checked(root: Path, published: dict[str, int], record: Record | None) -> bytes:
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
    return {path.rpartition("/")[0] for path in paths if not is_bookkeeping(path)} | set(checked)


def _without(files: dict[str, int], missing: list[str]) -> dict[str, int]:
    """The files, by inode, less the missing ones."""
    kept = dict(files)
    for relative in missing:
        del kept[relative]
    return kept


def _take_state(work: Path, published: Path, trusted: bool) -> tuple[Path, int, dict[str, int]]:
    """The next state folder, locked, and the files it keeps: the state before last where one is kept,
    holding only the files it shares with the published state (the same inode at the same path: at
    10,000 runs, all but a few of the cache's 256 record files, which a fresh folder would link again);
    else a fresh folder. Nothing is kept where the published state is not trusted."""
    state, lock = _locked_temporary(work, "state-")
    held = _adopt(work / layout.KEPT_STATE, state)
    if held is None:
        return state, lock, {}
    os.close(lock)
    try:
        return state, held, stage_check.check_state(state, published if trusted else None)
    except OSError:  # an entry that cannot be read or removed: a fresh folder instead
        os.close(held)
        shutil.rmtree(state, ignore_errors=True)
        state, lock = _locked_temporary(work, "state-")
        return state, lock, {}


def _locked_temporary(work: Path, prefix: str) -> tuple[Path, int]:
    """A new folder in the work folder, named with this build's process id (`build-<pid>-…`), and the
    descriptor that holds its lock (no other build's clean-up takes it)."""
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=work))
    return folder, _lock(folder)


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


def _keep_or_remove(folder: Path, kept: Path, keep: bool) -> None:
    """After a build: keep its stage (or state) folder as `kept` for the next build (when it holds the
    previous site, or a stage adopted from one: the next build checks it), else remove it."""
    if keep and not kept.exists():
        with phase(f"{kept.name}: keep"):
            try:
                os.replace(folder, kept)
                return
            except OSError:
                pass
    with phase(f"{kept.name}: delete"):
        shutil.rmtree(folder, ignore_errors=True)


def _swap(new: Path, current: Path, aside: Path) -> None:
    """Put a folder in another's place in one step: the two trade names (the old one ends up as `new`).

    Where the file system cannot exchange names, two renames do it, by way of `aside`, and a build
    killed between them leaves the old site aside, which the next build puts back (`_clean_up`).
    """
    if not current.exists():
        os.replace(new, current)
        return
    if _exchange(new, current):
        return
    os.replace(current, aside)
    os.replace(new, current)
    os.replace(aside, new)


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


def _clean_up(out: Path, work: Path) -> None:
    """Deal with what builds that were killed left in the work folder: put back an old site left aside,
    keep one stage folder as the next stage and one state folder as the next state (each is checked
    before use), remove the others. What an earlier sitegen kept beside the site (its stages) is removed."""
    earlier = f".{out.name}-"  # an earlier sitegen's folders beside the site: -old-*, -build-*, -stage
    for leftover in sorted([*work.glob("old-*"), *out.parent.glob(f"{earlier}old-*")]):
        if not out.exists():
            os.replace(leftover, out)
        else:
            shutil.rmtree(leftover, ignore_errors=True)
    stage, state = work / layout.KEPT_STAGE, work / layout.KEPT_STATE
    leftovers = [(folder, stage, True) for folder in work.glob("build-*")] + [(folder, state, True) for folder in work.glob("state-*")]
    leftovers += [(folder, stage, False) for folder in (*out.parent.glob(f"{earlier}build-*"), out.parent / f"{earlier}stage")]
    for leftover, kept, keep in leftovers:
        try:
            descriptor = _lock(leftover)
        except OSError:  # a build running now holds it (or it is gone)
            continue
        try:
            _keep_or_remove(leftover, kept, keep)
        finally:
            os.close(descriptor)


def _await_killed(work: Path) -> None:
    """Wait until no process holds the stage or state folder of a build that no longer runs.

    The processes a build forked (the stage's check, the beside process, the workers) inherit its
    locks, and a killed build's go on for a while, writing into its stage: its folders look held by a
    running build, and `_clean_up` would leave them. Waited for before the work folder is locked, which
    a running build (whose process id another process namespace may hide) needs in order to finish.
    """
    for folder in sorted([*work.glob("build-*"), *work.glob("state-*")]):
        if _builder_running(folder.name):
            continue
        with contextlib.suppress(OSError), _locked_folder(folder):  # (OSError: taken up by another build meanwhile)
            pass


def _builder_running(name: str) -> bool:
    """Whether the build a work folder is named after (`build-<pid>-…`) may still run: true for a name
    without a process id, or with that of a running process (perhaps another, given the same id since)."""
    pid = name.split("-")[1]
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


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
