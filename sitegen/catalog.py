"""The runs of a build as small records, read once from their bundles and cached between builds.

A site of 10,000 runs cannot hold every bundle in memory, nor decode every bundle again
when one of them changed. So a build scans content/runs into one `RunEntry` per file
(what the listings, the comparison choice and the index chart need: a few KB), and keeps
them in the site's `.build-runs/` keyed by each file's size, mtime and inode: the next
build decodes only the files that changed. Pages are rendered from the bundle files
again, one at a time, by the render workers.

The records are kept in CACHE_SHARDS files by a hash of their file names, each written only
when one of its runs changed: a rebuild after one bundle writes 200 KB, not the 47 MB of
all 10,000 records (writing fresh pages of a file costs the kernel 4 ms a MB here).
"""

from __future__ import annotations

import datetime as dt
import os
import zlib
from collections.abc import Callable
from pathlib import Path

import msgspec

from runner.bundle.schema import Bundle
from sitegen import charts, compare, exports, memo
from sitegen.cache import collector_paused, digest
from sitegen.capacity import chunk_record, ranked_run, standing_record
from sitegen.content_pages import ContentPage, Rendered
from sitegen.errors import InputError, InputErrors
from sitegen.index_view import SortKey, run_record, sort_keys
from sitegen.loader import load_bundle, read_bundle, read_input
from sitegen.parallel import fork_map
from sitegen.staging import Publication, Stage, mapped
from sitegen.summary import RunSummary, summarize

CACHE_DIR = ".build-runs/"
CACHE_HEAD = CACHE_DIR + "head"  # the code, pairs digest and page context the records were made with
CACHE_PAIRS = CACHE_DIR + "pairs"
CACHE_SHARDS = 256  # record files: at 10,000 runs about 40 records (190 KB) each


class RunEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One run as the build plans with it: where its bundle is, what it is, how it plots.

    What only the listings read (its summary, chart frontier and sort keys) is kept as msgpack and
    decoded by them, in their own process: decoding it with the rest took 40 of a rebuild's 60 ms.
    """

    name: str  # the bundle's file name in content/runs (the cache is published: no absolute paths)
    stamp: tuple[int, int, int]
    id: str  # the run's id (summary.id), a field of its own: a build looks it up 300,000 times
    title: str
    fingerprint: str
    measured_at: dt.datetime | None
    keys: compare.Keys
    summary: msgspec.Raw  # the run's RunSummary (run_summary)
    frontier: msgspec.Raw  # its points on the index chart: charts.run_frontier (frontier_points)
    # The run's pieces of the site-wide files, as JSON or CSV bytes: views of the cache file they were
    # read from, not copies (34 MB at 10,000 runs, which forked processes would copy page by page as
    # they read them).
    record: memoryview  # its JSON record for the listings' data chunks (index_view.run_record)
    ranked: memoryview  # it in the capacity ranking's data chunks (capacity.chunk_record)
    standing: memoryview  # it as the ranking page's first screen ranks it (capacity.standing_record)
    listed_json: memoryview  # its record in runs.json (exports.run_list_json)
    listed_csv: memoryview  # its line of runs.csv (exports.run_list_row)
    sort_keys: msgspec.Raw = msgspec.Raw(b"\x90")  # the record's place in each column's order: index_view.sort_keys (column_keys)
    clean: bool = False  # the bundle held nothing to redact: its bytes (by fingerprint) need no scrub when read again

    def run_summary(self) -> RunSummary:
        return _summary_decoder.decode(self.summary)

    def frontier_points(self) -> list[charts.Point]:
        return _frontier_decoder.decode(self.frontier)

    def column_keys(self) -> list[SortKey]:
        return _sort_keys_decoder.decode(self.sort_keys)

    def bundle(self, folder: Path) -> Bundle:
        """The run's bundle, read again from its file in `folder` (content/runs)."""
        return load_bundle(folder / self.name)


_summary_decoder = msgspec.msgpack.Decoder(RunSummary)
_frontier_decoder = msgspec.msgpack.Decoder(list[charts.Point])
_sort_keys_decoder = msgspec.msgpack.Decoder(list[SortKey])


class Cache(msgspec.Struct):
    """What the previous build read: its entries, and the comparison pairs chosen among them (by id)."""

    code: str
    entries: list[RunEntry]
    relations: str = ""
    pairs: list[tuple[str, str, str]] = []
    context: str = ""  # the shared page context the build keyed its pages with (Site.context_key)
    unreadable: list[str] = []  # the cache files (site paths) that were there but could not be read
    pages: Rendered = {}  # the content pages' title and html by the hash of their text

    def by_name(self) -> dict[str, RunEntry]:
        return {e.name: e for e in self.entries}


class CacheHead(msgspec.Struct, array_like=True):
    """The cache's file of what its records and pairs were made with."""

    code: str
    relations: str
    context: str
    pages: Rendered


def entry_of(path: Path, stamp: tuple[int, int, int], data: bytes) -> RunEntry:
    """The record of one bundle file's bytes (checked and scrubbed as every read is); its fingerprint
    hashes the bytes, which decide everything rendered from it (with the code, in each key)."""
    bundle, clean = read_bundle(path, data)
    summary = summarize(bundle)
    ranked = ranked_run(bundle)
    record = run_record(summary)
    return RunEntry(
        name=path.name,
        stamp=stamp,
        id=summary.id,
        title=ranked.title,
        fingerprint=digest(data),
        measured_at=summary.measured_at,
        keys=compare.keys_of(bundle),
        summary=msgspec.Raw(msgspec.msgpack.encode(summary)),
        frontier=msgspec.Raw(msgspec.msgpack.encode(charts.run_frontier(bundle))),
        record=memoryview(msgspec.json.encode(record)),
        ranked=memoryview(chunk_record(ranked)),
        standing=memoryview(standing_record(ranked)),
        listed_json=memoryview(exports.run_list_json(summary)),
        listed_csv=memoryview(exports.run_list_row(summary)),
        sort_keys=msgspec.Raw(msgspec.msgpack.encode(sort_keys(record))),
        clean=clean,
    )


def stamp_of(st: os.stat_result) -> tuple[int, int, int]:
    """What tells a file changed without reading it: size, mtime in ns and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _shard(name: str) -> str:
    """The cache file keeping the record of the bundle file `name`."""
    return f"{CACHE_DIR}runs-{zlib.crc32(name.encode()) % CACHE_SHARDS}"


def _recalled(path: Path, kind: type, unreadable: list[str]) -> object | None:
    """A cache file's value, as this process remembers writing it, else decoded; None when missing or
    unreadable (then listed in `unreadable`, by site path).

    The file is mapped rather than read (staging.mapped: a fresh process reading 47 MB of records pays
    25 ms more for the copies)."""
    value = memo.recall(path)
    if value is None:
        try:
            with open(path, "rb") as file:
                data = mapped(file.fileno())
            value = msgspec.msgpack.decode(data, type=kind)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError):  # ValueError: an empty file
            unreadable.append(f"{CACHE_DIR}{path.name}")
            return None
    return value


def read_cache(out: Path, code: str) -> Cache:
    """The previous build's cache; an empty one when missing or from other code. A record file that is
    missing or unreadable loses only its runs' records (they are read from their bundles again),
    the pairs file only the pairs (they are chosen again)."""
    unreadable: list[str] = []
    head = _recalled(out / CACHE_HEAD, CacheHead, unreadable)
    if not isinstance(head, CacheHead) or head.code != code:
        return Cache(code, [], unreadable=unreadable)
    try:
        names = sorted(name for name in os.listdir(out / CACHE_DIR) if name.startswith("runs-"))
    except OSError:
        names = []
    entries: list[RunEntry] = []
    with collector_paused():
        for name in names:
            shard = _recalled(out / CACHE_DIR / name, list[RunEntry], unreadable)
            entries += shard if isinstance(shard, list) else []
        pairs = _recalled(out / CACHE_PAIRS, list[tuple[str, str, str]], unreadable)
    relations, pairs = (head.relations, pairs) if isinstance(pairs, list) else ("", [])  # no pairs: chosen again
    return Cache(code, entries, relations, pairs, head.context, unreadable, head.pages)


def write_cache(stage: Stage, plan: Publication, cache: Cache, unreadable: list[str]) -> dict[str, object]:
    """Write the cache for the next build: each record file only when one of its runs changed (by file
    name, stamp and fingerprint), the pairs when the runs' relations did, and the files this build
    found `unreadable` whatever their keys say. Returns each cache file's value by site path, for the
    process to remember once the site is published."""
    for path in unreadable:
        plan.forget(path)
    shards: dict[str, list[RunEntry]] = {}
    for entry in cache.entries:
        shards.setdefault(_shard(entry.name), []).append(entry)
    files: dict[str, object] = {CACHE_HEAD: CacheHead(cache.code, cache.relations, cache.context, cache.pages), CACHE_PAIRS: cache.pairs}
    stage.write(CACHE_HEAD, msgspec.msgpack.encode(files[CACHE_HEAD]))
    if not plan.unchanged(CACHE_PAIRS, digest(cache.code, cache.relations)):
        stage.write(CACHE_PAIRS, msgspec.msgpack.encode(cache.pairs))
    for path, members in sorted(shards.items()):
        files[path] = members
        if not plan.unchanged(path, digest(cache.code, msgspec.msgpack.encode([(e.name, e.stamp, e.fingerprint) for e in members]))):
            stage.write(path, msgspec.msgpack.encode(members))
    return files


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


def new_cache(entries: list[RunEntry], pairs: list[tuple[RunEntry, RunEntry, str]], code: str, relations: str, context: str,
              pages: list[ContentPage]) -> Cache:
    """This build's entries, pairs and rendered pages, for the next build's read_cache."""
    return Cache(code, entries, relations, [(a.id, b.id, why) for a, b, why in pairs], context,
                 pages={page.text: (page.title, page.html) for page in pages})


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


BundleFile = tuple[str, tuple[int, int, int] | str]  # a bundle file's name, and its stamp or why it cannot be read


def bundle_files(folder: Path) -> list[BundleFile]:
    """Each `*.json` in folder (not hidden), in name order, with its stamp (a build lists them in a
    forked process while it reads its cache: 10,000 stats take 90 ms). Files are listed and sorted by
    name, not as Paths: sorting 10,000 Paths and stat-ing them through Path cost most of a rebuild's scan."""
    with os.scandir(folder) as listing:
        files = sorted((f for f in listing if f.name.endswith(".json") and not f.name.startswith(".")), key=lambda f: f.name)
    found: list[BundleFile] = []
    for file in files:
        try:
            found.append((file.name, stamp_of(file.stat())))
        except OSError as exc:
            found.append((file.name, f"cannot read: {exc.strerror}"))
    return found


def scan(folder: Path, cached: dict[str, RunEntry], jobs: int = 1, tick: Callable[[], None] = lambda: None,
         files: list[BundleFile] | None = None) -> list[RunEntry]:
    """An entry per bundle file of folder (`files`, as bundle_files lists them; listed here when not
    given), decoding only files not in the cache (across `jobs` forked workers when there are many).

    Every file's error is collected before failing, and an id used twice names both files.
    """
    errors: list[InputError] = []
    found: list[RunEntry | InputError | tuple[Path, tuple[int, int, int]]] = []
    for name, stamp in bundle_files(folder) if files is None else files:
        if isinstance(stamp, str):
            found.append(InputError(folder / name, None, stamp))
            continue
        entry = cached.get(name)
        found.append(entry if entry is not None and entry.stamp == stamp else (folder / name, stamp))
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
