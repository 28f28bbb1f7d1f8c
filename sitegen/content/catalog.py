"""The runs of a build as small records, read once from their bundles and cached between builds.

A site of 10,000 runs cannot hold every bundle in memory, nor decode every bundle again
when one of them changed. So a build scans content/runs into one `RunEntry` per file: what
planning needs (its id, date, comparison keys) and each run's pieces of the site-wide outputs
(a listing's row, a ranking record, a line of runs.csv: each `Piece` the output kinds register,
kept by its name). The entries are kept in the build cache (`cache/` of the state folder beside
the site, see layout) keyed by each file's size, mtime and inode: the next build decodes only the
files that changed. Pages are rendered from the bundle files again, one at a time, by the render workers.

The records are kept in CACHE_SHARDS files by a hash of their file names, each written only
when one of its runs changed: a rebuild after one bundle writes one small file, not all of them.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import struct
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from runner.bundle.schema import Bundle
from sitegen.content.loader import load_bundle, read_bundle, read_input
from sitegen.content.markdown import ContentPage, Rendered
from sitegen.errors import InputError, InputErrors
from sitegen.figures import compare
from sitegen.publish.layout import state_file
from sitegen.publish.manifest import mapped
from sitegen.publish.stage import Stage
from sitegen.rebuild.keys import collector_paused, fingerprint
from sitegen.rebuild.outputs import Output
from sitegen.rebuild.plan import Publication
from sitegen.serve import memo
from sitegen.support.parallel import fork_map

CACHE_DIR = ".cache/"  # a bookkeeping folder of the plan: in the state folder, not the site (layout)
CACHE_HEAD = CACHE_DIR + "head"  # the code, pairs digest and page context the records were made with
CACHE_PAIRS = CACHE_DIR + "pairs"
CACHE_SHARDS = 256  # record files: at 10,000 runs about 40 records (190 KB) each
T = TypeVar("T")
_SPAN = struct.Struct("<II")  # a piece's start and end in its entry's packed pieces
# What tells a bundle file changed without reading it: its size, mtime in ns and inode, then those of the
# files beside it that its verification reads (sidecars), and of the allowed_signers file where one is signed.
Stamp = tuple[int, ...]
UNREAD: Stamp = (0, 0, 0)  # the stamp of no file: an entry with it is read again by the next build
# The files beside a bundle `<stem>.json` that its checks read: its signature, sums, raw records and their
# signature (runner.bundle), and a peer import's per-request file (importers.source_requests).
SIDECARS = (".json.sig", ".sha256", ".requests.jsonl.gz", ".requests.jsonl.gz.sig", ".source-requests.jsonl.gz")
ALLOWED_SIGNERS = "allowed_signers"


class Scanned:
    """A bundle just read (and the path and bytes it was read from), for the pieces made from it: what
    several of them derive (its summary, its listing record) is made once, however many ask (`shared`);
    `known` gives some of them already made. `clean`: the scrub changed nothing, so `bundle` is also
    the bytes' bundle as decoded and checked (the checker's, which it then need not decode again).
    `alone`: the listing of its folder found no file beside it (SIDECARS), so the checker looks for none."""

    __slots__ = ("bundle", "path", "data", "clean", "alone", "_made")

    def __init__(self, bundle: Bundle, path: Path, data: bytes, known: dict[Callable, object] | None = None, clean: bool = False,
                 alone: bool = False) -> None:
        self.bundle, self.path, self.data, self.clean, self.alone = bundle, path, data, clean, alone
        self._made: dict[Callable, object] = dict(known or {})

    def shared(self, make: Callable[[Scanned], T]) -> T:
        """make(self), made once for this bundle."""
        if make not in self._made:
            self._made[make] = make(self)
        return self._made[make]  # type: ignore[return-value]


class Piece(msgspec.Struct, frozen=True):
    """A run's piece of a site-wide output (its row in a listing, its line of runs.csv), made when its
    bundle is read and kept with its entry, so that a build joins the pieces rather than reading every
    bundle again. Registered by the output kinds that read it (pages.registry), by its name."""

    name: str
    make: Callable[[Scanned], bytes]


class RunEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One run as the build plans with it: where its bundle is, what it is, and its pieces of the
    site-wide outputs."""

    name: str  # the bundle's file name in content/runs
    stamp: Stamp
    id: str  # the run's id, a field of its own: a build looks it up 300,000 times
    fingerprint: str
    measured_at: dt.datetime | None
    keys: compare.Keys
    # Its pieces, packed (packed_pieces), in the order of the build's pieces (Site.positions): a view of the
    # cache file they were read from, not a copy (tens of MB at 10,000 runs, which forked processes would
    # copy page by page as they read them), and one view, not one a piece.
    pieces: memoryview
    clean: bool = False  # the bundle held nothing to redact: its bytes (by fingerprint) need no scrub when read again

    def piece(self, position: int) -> memoryview:
        """The run's piece at this position of the build's pieces."""
        start, end = _SPAN.unpack_from(self.pieces, 4 * position)
        return self.pieces[start:end]

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
    unreadable: list[str] = []  # the cache files (site paths) that were there but could not be read
    pages: Rendered = {}  # the content pages' title and html by the hash of their text
    pieces: list[str] = []  # the names of the pieces its entries hold

    def by_name(self) -> dict[str, RunEntry]:
        return {e.name: e for e in self.entries}


class CacheHead(msgspec.Struct, array_like=True):
    """The cache's file of what its records and pairs were made with."""

    code: str
    relations: str
    context: str
    pages: Rendered
    pieces: list[str] = []  # the names of the pieces its entries hold


def packed_pieces(values: Sequence[bytes]) -> bytes:
    """A run's pieces as one buffer: where each starts and the last ends, then the pieces."""
    offsets = [4 * (len(values) + 1)]
    for value in values:
        offsets.append(offsets[-1] + len(value))
    return struct.pack(f"<{len(offsets)}I", *offsets) + b"".join(values)


def pieces_at(entries: Sequence[RunEntry], position: int) -> list[memoryview]:
    """Each run's piece at this position of the build's pieces (RunEntry.piece for many runs: a build
    joins 10,000 of them at a time)."""
    at, unpack = 4 * position, _SPAN.unpack_from
    found = []
    for entry in entries:
        buffer = entry.pieces
        start, end = unpack(buffer, at)
        found.append(buffer[start:end])
    return found


def piece_positions(pieces: Sequence[Piece]) -> dict[str, int]:
    """Where each piece is in the entries scanned with these `pieces`, by name (RunEntry.piece)."""
    return {piece.name: position for position, piece in enumerate(pieces)}


def entry_of(path: Path, stamp: Stamp, data: bytes, pieces: Sequence[Piece] = (), known: dict[Callable, object] | None = None,
             alone: bool = False) -> RunEntry:
    """The record of one bundle file's bytes (checked and scrubbed as every read is), with its `pieces`
    (`known`: values they share already made; `alone`: as Scanned's); its fingerprint hashes the bytes and
    the stamps of the files beside it, which decide everything rendered from it (with the code, in each key)."""
    bundle, clean = read_bundle(path, data)
    scanned = Scanned(bundle, path, data, known, clean, alone)
    return RunEntry(
        name=path.name,
        stamp=stamp,
        id=bundle.id,
        fingerprint=fingerprint(data + struct.pack(f"<{len(stamp) - 3}q", *stamp[3:]) if len(stamp) > 3 else data),
        measured_at=bundle.measured_at,
        keys=compare.keys_of(bundle),
        pieces=memoryview(packed_pieces([piece.make(scanned) for piece in pieces])),
        clean=clean,
    )


def stamp_of(st: os.stat_result) -> Stamp:
    """What tells a file changed without reading it: size, mtime in ns and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _shard(name: str) -> str:
    """The cache file keeping the record of the bundle file `name`."""
    return f"{CACHE_DIR}runs-{zlib.crc32(name.encode()) % CACHE_SHARDS}"


def _recalled(path: Path, kind: type, unreadable: list[str]) -> object | None:
    """A cache file's value, as this process remembers writing it, else decoded; None when missing or
    unreadable (then listed in `unreadable`, by its path in the plan).

    The file is mapped rather than read (manifest.mapped): a fresh process reading every record would
    otherwise pay for copies of them."""
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


def cache_folder(state: Path) -> Path:
    """The build cache's folder in a state folder."""
    return Path(state_file(state, CACHE_DIR))


def read_cache(state: Path, code: str, pieces: Sequence[str] | None = None) -> Cache:
    """The previous build's cache, from its state folder (whole, so consistent, whichever site it was
    built for: each record is that of a bundle file by its stamp); an empty one when missing, from
    other code or, where `pieces` are named, holding others. A record file that is missing or unreadable
    loses only its runs' records (they are read from their bundles again), the pairs file only the pairs
    (they are chosen again)."""
    unreadable: list[str] = []
    folder = cache_folder(state)
    head = _recalled(Path(state_file(state, CACHE_HEAD)), CacheHead, unreadable)
    if not isinstance(head, CacheHead) or head.code != code or pieces is not None and head.pieces != list(pieces):
        return Cache(code, [], unreadable=unreadable)
    try:
        names = sorted(name for name in os.listdir(folder) if name.startswith("runs-"))
    except OSError:
        names = []
    entries: list[RunEntry] = []
    with collector_paused():
        for name in names:
            shard = _recalled(folder / name, list[RunEntry], unreadable)
            entries += shard if isinstance(shard, list) else []
        pairs = _recalled(Path(state_file(state, CACHE_PAIRS)), list[tuple[str, str, str]], unreadable)
    relations, pairs = (head.relations, pairs) if isinstance(pairs, list) else ("", [])  # no pairs: chosen again
    return Cache(code, entries, relations, pairs, head.context, unreadable, head.pages, head.pieces)


def write_cache(stage: Stage, plan: Publication, cache: Cache, unreadable: list[str]) -> dict[str, object]:
    """Write the cache for the next build: each record file only when one of its runs changed (by file
    name, stamp and fingerprint) or the pieces they hold did, the pairs when the runs' relations did, and the files this build
    found `unreadable` whatever their keys say. Returns each cache file's value by its path in the plan,
    for the process to remember once the site is published."""
    for path in unreadable:
        plan.forget(path)
    shards: dict[str, list[RunEntry]] = {}
    for entry in cache.entries:
        shards.setdefault(_shard(entry.name), []).append(entry)
    files: dict[str, object] = {CACHE_HEAD: CacheHead(cache.code, cache.relations, cache.context, cache.pages, cache.pieces),
                                CACHE_PAIRS: cache.pairs}
    stage.write(CACHE_HEAD, msgspec.msgpack.encode(files[CACHE_HEAD]))  # what the next build checks the rest against: always
    if not plan.unchanged(Output(CACHE_PAIRS, facts=(cache.relations,))):
        stage.write(CACHE_PAIRS, msgspec.msgpack.encode(cache.pairs))
    held = ",".join(cache.pieces)
    for path, members in sorted(shards.items()):
        files[path] = members
        named = msgspec.msgpack.encode([(e.name, e.stamp) for e in members])  # its runs' files, by name and stamp
        if not plan.unchanged(Output(path, [e.fingerprint for e in members], facts=(named, held))):
            stage.write(path, msgspec.msgpack.encode(members))
    return files


def relations_fingerprint(entries: list[RunEntry]) -> str:
    """A hash of what decides the comparison pairs: each run's id, keys and date."""
    return fingerprint(msgspec.msgpack.encode([(e.id, e.keys, e.measured_at) for e in entries]))


def related_pairs(entries: list[RunEntry], cache: Cache, relations: str) -> list[tuple[RunEntry, RunEntry, str]]:
    """compare.related_pairs over the entries, reused from the cache while no run's id, keys or date
    changed (`relations`, their relations_fingerprint; a run measured again with new figures changes none of them)."""
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
              pages: list[ContentPage], pieces: Sequence[str]) -> Cache:
    """This build's entries, pairs and rendered pages, for the next build's read_cache."""
    return Cache(code, entries, relations, [(a.id, b.id, why) for a, b, why in pairs], context,
                 pages={page.text: (page.title, page.html) for page in pages}, pieces=list(pieces))


SCAN_CHUNK = 32  # bundles a worker decodes at a time
_entry_decoder = msgspec.msgpack.Decoder(RunEntry)


def _read_entry(pieces: Sequence[Piece], item: tuple[Path, Stamp]) -> bytes | tuple[str, str | None, str]:
    """The entry of one bundle file as msgpack (as the cache holds it: cheaper than pickle to send
    between processes), or its error as (path, where, message) (an InputError as plain values, which
    cross between processes whatever the exception class takes)."""
    path, stamp = item
    try:
        # A stamp holds the stamps of the files the listing found beside the bundle after its own (bundle_files).
        return msgspec.msgpack.encode(entry_of(path, stamp, read_input(path), pieces, alone=len(stamp) == len(UNREAD)))
    except InputError as exc:
        return (exc.path, exc.where, exc.message)


BundleFile = tuple[str, Stamp | str]  # a bundle file's name, and its stamp or why it cannot be read


def bundle_files(folder: Path) -> list[BundleFile]:
    """Each `*.json` in folder (not hidden), in name order, with its stamp (a build lists them in a
    forked process while it reads its cache). Files are listed and sorted by name, not as Paths:
    sorting 10,000 Paths and stat-ing them through Path cost most of a rebuild's scan."""
    sidecars: dict[str, list[os.DirEntry]] = {}
    with os.scandir(folder) as listing:
        files = []
        for f in listing:
            if f.name.startswith("."):
                continue
            if f.name.endswith(".json"):
                files.append(f)
            elif stem := next((f.name.removesuffix(end) for end in SIDECARS if f.name.endswith(end)), None):
                sidecars.setdefault(stem, []).append(f)
    files.sort(key=lambda f: f.name)
    signers = _allowed_signers(folder) if sidecars else ()
    found: list[BundleFile] = []
    for file in files:
        try:
            beside = sorted(sidecars.get(file.name.removesuffix(".json"), ()), key=lambda f: f.name)
            signed = signers if any(f.name.endswith(".sig") for f in beside) else ()
            found.append((file.name, stamp_of(file.stat()) + tuple(n for f in beside for n in stamp_of(f.stat())) + signed))
        except OSError as exc:
            found.append((file.name, f"cannot read: {exc.strerror}"))
    return found


def _allowed_signers(folder: Path) -> Stamp:
    """The stamp of the allowed_signers file nearest above the bundles of `folder` (sitegen.check.signing's), if any."""
    try:
        resolved = folder.resolve()
    except (OSError, RuntimeError):
        return ()
    for above in (resolved, *resolved.parents):
        try:
            return stamp_of((above / ALLOWED_SIGNERS).stat())
        except OSError:
            continue
    return ()


def scan(folder: Path, cached: dict[str, RunEntry], jobs: int = 1, tick: Callable[[], None] = lambda: None,
         files: list[BundleFile] | None = None, pieces: Sequence[Piece] = ()) -> list[RunEntry]:
    """An entry per bundle file of folder (`files`, as bundle_files lists them; listed here when not
    given) with its `pieces`, decoding only files not in the cache (across `jobs` forked workers when
    there are many; the cache holds the pieces read_cache was given the names of).

    Every file's error is collected before failing, and an id used twice names both files.
    """
    errors: list[InputError] = []
    found: list[RunEntry | InputError | tuple[Path, Stamp]] = []
    for name, stamp in bundle_files(folder) if files is None else files:
        if isinstance(stamp, str):
            found.append(InputError(folder / name, None, stamp))
            continue
        entry = cached.get(name)
        found.append(entry if entry is not None and entry.stamp == stamp else (folder / name, stamp))
    unread = [item for item in found if isinstance(item, tuple)]
    decoded = fork_map(functools.partial(_read_entry, pieces), unread, jobs, SCAN_CHUNK)
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
