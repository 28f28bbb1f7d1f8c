"""Where a build keeps what is not the site: one folder beside the published one, never inside it.

`sitegen build --out site` publishes `site/` holding the site and nothing else, so whoever uploads
or serves the folder ships only its pages. Beside it, `.site.sitegen/` holds the build's own files:

- `state/`: what the published site was built from: the manifest (each output's key and files),
  the record of its files' inodes, the build cache (`cache/`) and the stamp of the site folder it
  describes (`site-stamp`). A build writes the next one in a `state-*` folder and swaps it in
  right after the site; a state whose stamp is not the site folder's describes another site.
- `stage/`: the site before last, kept as the next build's stage; `build-<pid>-*`: a build's stage
  while it runs (locked, by it and the processes it forks), and `state-<pid>-*` its state; `old-*`:
  the old site set aside where two folders cannot trade names in one step.
- `kept-state/`: the state before last, kept the same way as the next build's state folder: its
  cache files that did not change since are the published ones (hard links), not linked again.

The folder is beside the site so that a stage is on the site's file system (a rename puts it in
place), and it is named after the site: a folder that has one beside it was built by sitegen.
In a build's plan, bookkeeping files have paths starting with "." (`.manifest`, `.cache/head`),
which no file of the site has; they are kept in the state folder without that dot.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, TypeVar

import msgspec

Kept = TypeVar("Kept")

STATE = "state"  # the published site's bookkeeping, in the work folder
KEPT_STAGE = "stage"  # the site before last, kept for the next build
KEPT_STATE = "kept-state"  # the state before last, kept for the next build
SITE_STAMP = "site-stamp"  # in a state folder: the stamp of the site folder it describes
EARLIER_MANIFESTS = (".build-manifest", ".build-manifest.json")  # inside a site built by an earlier sitegen

Stamp = tuple[int, int, int]  # a folder's device, inode and change time (ns): which no one can set back


def work_folder(out: Path) -> Path:
    """The folder beside the (resolved) output folder that holds everything of a build but the site."""
    return out.parent / f".{out.name}.sitegen"


def is_bookkeeping(relative: str) -> bool:
    """Whether a path of a build's plan names a bookkeeping file (kept in the state folder) rather than a site file."""
    return relative.startswith(".")


def state_file(state: Path, relative: str) -> str:
    """Where a bookkeeping file of the plan (".cache/head") is in a state folder (state/cache/head)."""
    return f"{state}/{relative[1:]}"


def read_kept(state: Path, relative: str, kind: type[Kept]) -> Kept | None:
    """A bookkeeping file the previous build left in its state folder (msgpack of `kind`); None when missing or unreadable."""
    try:
        return msgspec.msgpack.decode(Path(state_file(state, relative)).read_bytes(), type=kind)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def stamp(found: os.stat_result) -> Stamp:
    """A folder's stamp: any other folder put in its place, or a change to its own entries, has another."""
    return (found.st_dev, found.st_ino, found.st_ctime_ns)


def describes(state: Path, out: Path) -> bool:
    """Whether the state folder is that of the site now in `out`: its stamp is the folder's own.

    A site copied, restored, moved or built by another tool in between is another folder (a new inode,
    or at least a new change time, as ext4 hands freed inode numbers out again), as is one whose top
    entries were added or removed since; its state is not trusted, and the site is built whole.
    """
    try:
        with open(f"{state}/{SITE_STAMP}", "rb") as file:
            recorded = msgspec.msgpack.decode(file.read(), type=tuple[int, int, int])
        return recorded == stamp(os.stat(out, follow_symlinks=False))
    except (OSError, ValueError):  # none, unreadable, or no site: msgspec's DecodeError is a ValueError
        return False


def write_stamp(state: Path, folder: int) -> None:
    """Record in a state folder the stamp of the site folder it describes (open as `folder`), once that
    folder is in place: the swap itself changes the folder's change time."""
    with new_file(state / SITE_STAMP) as file:
        file.write(msgspec.msgpack.encode(stamp(os.fstat(folder))))


def new_file(path: Path) -> BinaryIO:
    """A file of a state folder opened for writing as a new file: one there is removed first, never
    written through (a kept state's files may be hard links of the published state's)."""
    path.unlink(missing_ok=True)
    return open(path, "xb")
