"""The manifest and the inode record a build leaves in its state folder for the next build.

The manifest is each output's key and files, the record the published site's files by inode (with
the stamp of the manifest they belong to, and the folders' snapshots of stage_check). While the
published manifest is the very file its build wrote, the record vouches for it and its paths are
not checked again; else the publication walks the published site for its files. Both are msgpack,
mapped rather than read.
"""

from __future__ import annotations

import itertools
import mmap
import os
from pathlib import Path

import msgspec

from sitegen.publish import layout, stage_check
from sitegen.publish.layout import state_file
from sitegen.rebuild.keys import collector_paused
from sitegen.serve import memo

MANIFEST = ".manifest"  # in the state folder (layout), msgpack: each output's key and files
MANIFEST_VERSION = 3


Manifest = dict[str, tuple[str, list[str]]]  # output -> (key, its files)


class ManifestFile(msgspec.Struct, array_like=True):
    version: int
    outputs: Manifest = {}


def read_published(state: Path, record: Record | None) -> tuple[Manifest, dict[str, int] | None]:
    """The previous build's outputs, each with its key and files (from its state folder), and that
    build's record of its site files' inodes (`record`, read by read_record) where it belongs to this
    very manifest file; no outputs when the manifest is missing, unreadable or of another version.

    A manifest its record vouches for holds the bytes its build wrote, so it is not checked again
    (the check is a pass over every path); any other is refused if it names a file that would
    leave the output folder, a hidden one, or one not inside the output that claims it.
    """
    path = state_file(state, MANIFEST)
    remembered = memo.recall(Path(path))  # what this process published last, while it is still there
    if remembered is not None:
        return remembered[0], remembered[1].files  # type: ignore[index]
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as file:
            found = os.fstat(file.fileno())
            data = mapped(file.fileno())
        with collector_paused():
            manifest = msgspec.msgpack.decode(data, type=ManifestFile)
    except (OSError, ValueError):  # msgspec's DecodeError is a ValueError, as mmap's refusal of an empty file is
        return {}, None
    if manifest.version != MANIFEST_VERSION:
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


class InodesFile(msgspec.Struct, array_like=True):
    """The record a build leaves in its state folder: the site it published, its files by inode and its
    folders by snapshot (stage_check), and the site before it, which the kept stage holds, as that was
    published. Kept as msgpack until needed: the check decodes the stage's part, in its own process."""

    manifest: tuple[int, int]  # the manifest file's inode and change time (which no one can set)
    files: msgspec.Raw
    folders: msgspec.Raw = _NOTHING
    stage_files: msgspec.Raw = _NOTHING
    stage_folders: msgspec.Raw = _NOTHING


class Record(msgspec.Struct):
    """A build's record as read, with the published files decoded."""

    stored: InodesFile
    files: dict[str, int]

    @property
    def manifest(self) -> tuple[int, int]:
        return self.stored.manifest


_INODES = "inodes"  # in a state folder: the published site's files by inode


def _manifest_stamp(state: Path) -> tuple[int, int]:
    found = os.lstat(state_file(state, MANIFEST))
    return (found.st_ino, found.st_ctime_ns)


def read_record(state: Path) -> Record | None:
    """The published site files' inodes as their build recorded them (in its state folder); None unless
    that build's manifest is the one there now, by its stamp (not one written over since). A process
    that published the site itself remembers the record."""
    remembered = memo.recall(Path(state_file(state, MANIFEST)))
    if remembered is not None:
        return remembered[1]  # type: ignore[index]
    try:
        manifest = _manifest_stamp(state)
        with open(state / _INODES, "rb") as file:
            found = msgspec.msgpack.decode(mapped(file.fileno()), type=InodesFile)
        return Record(found, msgspec.msgpack.decode(found.files, type=dict[str, int])) if found.manifest == manifest else None
    except (OSError, ValueError):  # msgspec's DecodeError is a ValueError, as mmap's refusal of an empty file is
        return None


def mapped(descriptor: int) -> mmap.mmap:
    """A build file's bytes mapped, not read (the manifest, the record and the cache's record files:
    megabytes at 10,000 runs), as a fresh process pays for every page it copies them into; what
    is left undecoded of them refers to the map. ValueError for an empty file. Builds replace these
    files, never write them in place; a tool that truncated one in place while a build read it would
    stop that build (SIGBUS), not publish a wrong site."""
    return mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)


def record_inodes(state: Path, record: InodesFile) -> None:
    """Leave the record of the site about to be published for the next build, in its state folder (not
    yet published: a record that cannot be written fails the build, and the previous site stays)."""
    with layout.new_file(state / _INODES) as file:
        file.writelines(_pieces(record))


def _pieces(record: InodesFile) -> list[bytes | msgspec.Raw]:
    """The record's msgpack in pieces, its parts kept as msgpack written as they are: most of it is the
    previous record's, and joining them first would cost a fresh buffer of the whole record. An
    array_like struct is a msgpack array; one of fewer than 16 fields (this one's 5) has a one-byte header."""
    values = msgspec.structs.astuple(record)
    return [bytes([0x90 | len(values)])] + [v if isinstance(v, msgspec.Raw) else msgspec.msgpack.encode(v) for v in values]


def new_record(state: Path, published: dict[str, int], folders: stage_check.Folders, before: Record | None) -> Record:
    """The record of the site whose manifest is in the state folder `state`, with the site before it
    (`before`, the record the build started from, where it vouched for the stage the build's check
    used) as that was published."""
    encode = msgspec.msgpack.encode
    stored = InodesFile(_manifest_stamp(state), msgspec.Raw(encode(published)), msgspec.Raw(encode(folders)),
                         *((before.stored.files, before.stored.folders) if before is not None else ()))
    return Record(stored, published)


# What a NUL-framed path must not hold: a backslash, an empty part (absolute, "a//b", "a/"),
# an empty path, a "." or ".." part, or a hidden part but the first (a bookkeeping file's).
_OUTSIDE = ("\\", "\0/", "//", "/\0", "\0\0", "/.", *(a + dots + b for dots in (".", "..") for a in "\0/" for b in "\0/"))


def _all_inside(paths: list[str]) -> bool:
    """Whether every manifest path names a file strictly inside the output folder (or the state folder),
    and no hidden file of the site.

    Checked as text (no "..", not absolute), all paths joined in one string searched for each bad
    pattern: bytes' own searches over one string, far cheaper than a regular expression per path.
    """
    joined = "\0" + "\0".join(paths) + "\0"
    return bool(paths) and joined.count("\0") == len(paths) + 1 and not any(bad in joined for bad in _OUTSIDE)
