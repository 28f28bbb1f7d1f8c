"""The runs of a build as small records, read once from their bundles and cached between builds.

A site of 10,000 runs cannot hold every bundle in memory, nor decode every bundle again
when one of them changed. So a build scans content/runs into one `RunEntry` per file
(what the listings, the comparison choice and the index chart need: a few hundred bytes),
and keeps them in the site's `.build-cache` keyed by each file's size, mtime and inode:
the next build decodes only the files that changed. Pages are rendered from the bundle
files again, one at a time, by the render workers.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path

import msgspec

from runner.schema import Bundle
from sitegen import charts, compare, runview
from sitegen.cache import digest
from sitegen.errors import InputError, InputErrors
from sitegen.loader import load_bundle
from sitegen.summary import RunSummary, summarize

CACHE_FILE = ".build-cache"


class RunEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One run as the build plans with it: where its bundle is, what it is, how it plots."""

    path: str
    stamp: tuple[int, int, int]
    title: str
    fingerprint: str
    summary: RunSummary
    keys: compare.Keys
    frontier: list[charts.Point]

    @property
    def id(self) -> str:
        return self.summary.id

    @property
    def measured_at(self) -> dt.datetime | None:
        return self.summary.measured_at

    def bundle(self) -> Bundle:
        """The run's bundle, read again from its file."""
        return load_bundle(Path(self.path))


class _Cache(msgspec.Struct):
    code: str
    entries: list[RunEntry]


def entry_of(path: Path, stamp: tuple[int, int, int], bundle: Bundle) -> RunEntry:
    """The record of one decoded bundle."""
    return RunEntry(
        path=str(path),
        stamp=stamp,
        title=runview.title(bundle),
        fingerprint=digest(msgspec.json.encode(bundle)),
        summary=summarize(bundle),
        keys=compare.keys_of(bundle),
        frontier=charts.pareto_frontier(charts.run_points(bundle)),
    )


def stamp_of(path: Path) -> tuple[int, int, int]:
    """What tells a file changed without reading it: size, mtime in ns and inode."""
    st = path.stat()
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def read_cache(out: Path, code: str) -> dict[str, RunEntry]:
    """The previous build's entries by path, or none when missing, unreadable or from other code."""
    try:
        cache = msgspec.msgpack.decode((out / CACHE_FILE).read_bytes(), type=_Cache)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
    return {e.path: e for e in cache.entries} if cache.code == code else {}


def encode_cache(entries: list[RunEntry], code: str) -> bytes:
    """The entries for the next build's read_cache."""
    return msgspec.msgpack.encode(_Cache(code, entries))


def scan(folder: Path, cached: dict[str, RunEntry], tick: Callable[[], None] = lambda: None) -> list[RunEntry]:
    """An entry per `*.json` in folder, sorted by file name, decoding only files not in the cache.

    Every file's error is collected before failing, as load_bundles does, and an id used twice
    names both files.
    """
    errors: list[InputError] = []
    entries: list[RunEntry] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.json")):
        tick()
        try:
            stamp = stamp_of(path)
            entry = cached.get(str(path))
            if entry is None or entry.stamp != stamp:
                entry = entry_of(path, stamp, load_bundle(path))
        except OSError as exc:
            errors.append(InputError(path, None, f"cannot read: {exc.strerror}"))
            continue
        except InputError as exc:
            errors.append(exc)
            continue
        if entry.id in seen:
            errors.append(InputError(path, "$.id", f"id {entry.id!r} is already used by {seen[entry.id]}"))
            continue
        seen[entry.id] = str(path)
        entries.append(entry)
    if errors:
        raise InputErrors(errors)
    return entries


def count_files(folder: Path) -> int:
    """How many bundle files a scan will visit (for the progress display)."""
    return sum(1 for name in os.listdir(folder) if name.endswith(".json"))
