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

from runner.bundle.schema import Bundle
from sitegen import charts, compare, exports, memo
from sitegen.cache import collector_paused, digest
from sitegen.capacity import chunk_record, ranked_run, standing_record
from sitegen.errors import InputError, InputErrors
from sitegen.index_view import SortKey, run_record, sort_keys
from sitegen.loader import decode_bundle_file, load_bundle, read_input
from sitegen.parallel import fork_map
from sitegen.summary import RunSummary, summarize

CACHE_FILE = ".build-cache"


class RunEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One run as the build plans with it: where its bundle is, what it is, how it plots."""

    name: str  # the bundle's file name in content/runs (the cache is published: no absolute paths)
    stamp: tuple[int, int, int]
    id: str  # the run's id (summary.id), a field of its own: a build looks it up 300,000 times
    title: str
    fingerprint: str
    summary: RunSummary
    keys: compare.Keys
    frontier: list[charts.Point]
    record: bytes = b""  # the run's JSON record for the listings' data chunks (index_view.run_record)
    ranked: bytes = b""  # the run in the capacity ranking's data chunks (capacity.chunk_record)
    standing: bytes = b""  # the run as the ranking page's first screen ranks it (capacity.standing_record)
    listed_json: bytes = b""  # the run's record in runs.json (exports.run_list_json)
    listed_csv: bytes = b""  # the run's line of runs.csv (exports.run_list_row)
    sort_keys: list[SortKey] = []  # the record's place in each column's order (index_view.sort_keys)

    @property
    def measured_at(self) -> dt.datetime | None:
        return self.summary.measured_at

    def bundle(self, folder: Path) -> Bundle:
        """The run's bundle, read again from its file in `folder` (content/runs)."""
        return load_bundle(folder / self.name)


class Cache(msgspec.Struct):
    """What the previous build read: its entries, and the comparison pairs chosen among them (by id)."""

    code: str
    entries: list[RunEntry]
    relations: str = ""
    pairs: list[tuple[str, str, str]] = []
    context: str = ""  # the shared page context the build keyed its pages with (Site.context_key)

    def by_name(self) -> dict[str, RunEntry]:
        return {e.name: e for e in self.entries}


def entry_of(path: Path, stamp: tuple[int, int, int], data: bytes) -> RunEntry:
    """The record of one bundle file's bytes (checked and scrubbed as every read is); its fingerprint
    hashes the bytes, which decide everything rendered from it (with the code, in each key)."""
    bundle = decode_bundle_file(path, data)
    summary = summarize(bundle)
    ranked = ranked_run(bundle)
    record = run_record(summary)
    return RunEntry(
        name=path.name,
        stamp=stamp,
        id=summary.id,
        title=ranked.title,
        fingerprint=digest(data),
        summary=summary,
        keys=compare.keys_of(bundle),
        frontier=charts.run_frontier(bundle),
        record=msgspec.json.encode(record),
        ranked=chunk_record(ranked),
        standing=standing_record(ranked),
        listed_json=exports.run_list_json(summary),
        listed_csv=exports.run_list_row(summary),
        sort_keys=sort_keys(record),
    )


def stamp_of(st: os.stat_result) -> tuple[int, int, int]:
    """What tells a file changed without reading it: size, mtime in ns and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def read_cache(out: Path, code: str) -> Cache:
    """The previous build's cache (as this process remembers it, while the file is the one it wrote);
    an empty one when missing, unreadable or from other code."""
    cache = memo.recall(out / CACHE_FILE)
    if not isinstance(cache, Cache):
        try:
            with collector_paused():
                cache = msgspec.msgpack.decode((out / CACHE_FILE).read_bytes(), type=Cache)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return Cache(code, [])
    return cache if cache.code == code else Cache(code, [])


def relations_digest(entries: list[RunEntry]) -> str:
    """A hash of what decides the comparison pairs: each run's id, keys and date."""
    return digest(msgspec.msgpack.encode([(e.id, e.keys, e.measured_at) for e in entries]))


def related_pairs(entries: list[RunEntry], cache: Cache, relations: str) -> list[tuple[RunEntry, RunEntry, str]]:
    """compare.related_pairs over the entries, reused from the cache while no run's id, keys or date
    changed (`relations`, their relations_digest; a run measured again with new figures changes none of them)."""
    if cache.relations and cache.relations == relations:
        by_id = {e.id: e for e in entries}
        return [(by_id[a], by_id[b], why) for a, b, why in cache.pairs]
    return compare.related_pairs(entries, keys=lambda e: e.keys)


def steady_runs(entries: list[RunEntry], cache: Cache, relations: str, context: str) -> frozenset[str]:
    """The runs whose own pages the previous build keyed from the same inputs: the same code (the
    cache is the code's), comparison pairs (`relations`) and shared page context (`context`), and
    the same bundle bytes (fingerprint). Their keys need not be hashed again."""
    if not cache.relations or cache.relations != relations or cache.context != context:
        return frozenset()
    before = {e.id: e.fingerprint for e in cache.entries}
    return frozenset(e.id for e in entries if before.get(e.id) == e.fingerprint)


def new_cache(entries: list[RunEntry], pairs: list[tuple[RunEntry, RunEntry, str]], code: str, relations: str, context: str) -> Cache:
    """This build's entries and pairs, for the next build's read_cache."""
    return Cache(code, entries, relations, [(a.id, b.id, why) for a, b, why in pairs], context)


SCAN_CHUNK = 32  # bundles a worker decodes at a time
_entry_decoder = msgspec.msgpack.Decoder(RunEntry)


def _read_entry(item: tuple[Path, tuple[int, int, int]]) -> bytes | tuple[str, str | None, str]:
    """The entry of one bundle file as msgpack (as the cache holds it: a tenth of pickle's cost to send
    between processes), or its error as (path, where, message) (an InputError as plain values, which
    cross between processes whatever the exception class takes)."""
    path, stamp = item
    try:
        return msgspec.msgpack.encode(entry_of(path, stamp, read_input(path)))
    except InputError as exc:
        return (exc.path, exc.where, exc.message)


def scan(folder: Path, cached: dict[str, RunEntry], jobs: int = 1, tick: Callable[[], None] = lambda: None) -> list[RunEntry]:
    """An entry per `*.json` in folder, sorted by file name, decoding only files not in the cache
    (across `jobs` forked workers when there are many). Files are listed and sorted by name, not as
    Paths: sorting 10,000 Paths and stat-ing them through Path cost most of a rebuild's scan.

    Every file's error is collected before failing, and an id used twice names both files.
    """
    errors: list[InputError] = []
    found: list[RunEntry | InputError | tuple[Path, tuple[int, int, int]]] = []
    with os.scandir(folder) as listing:
        files = sorted((f for f in listing if f.name.endswith(".json") and not f.name.startswith(".")), key=lambda f: f.name)
    for file in files:
        try:
            stamp = stamp_of(file.stat())
        except OSError as exc:
            found.append(InputError(folder / file.name, None, f"cannot read: {exc.strerror}"))
            continue
        entry = cached.get(file.name)
        found.append(entry if entry is not None and entry.stamp == stamp else (folder / file.name, stamp))
    unread = [item for item in found if isinstance(item, tuple)]
    decoded = fork_map(_read_entry, unread, jobs, SCAN_CHUNK)
    entries: list[RunEntry] = []
    seen: dict[str, str] = {}  # id -> the file name that has it
    for item in found:
        tick()
        if isinstance(item, InputError):
            errors.append(item)
            continue
        if isinstance(item, tuple):
            result = next(decoded)
            if isinstance(result, tuple):
                errors.append(InputError(*result))
                continue
            item = _entry_decoder.decode(result)
        run_id = item.id
        if run_id in seen:
            errors.append(InputError(folder / item.name, "$.id", f"id {run_id!r} is already used by {folder / seen[run_id]}"))
            continue
        seen[run_id] = item.name
        entries.append(item)
    if errors:
        raise InputErrors(errors)
    return entries


def count_files(folder: Path) -> int:
    """How many bundle files a scan will visit (for the progress display)."""
    return sum(1 for name in os.listdir(folder) if name.endswith(".json") and not name.startswith("."))
