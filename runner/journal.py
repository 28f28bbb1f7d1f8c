"""The run journal (JSON lines, fsync'd per cell): nothing finished is lost.

Line one is the header (the bundle's metadata and the planned matrix); every further line
is one finished prefill point or decode cell. A crash can at worst cut the last line short,
which `load` cuts off, so the journal stays whole however often a run is resumed. An open
journal is locked: a second runner on the same run stops instead of measuring it twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import BinaryIO

import msgspec

from runner.bundle.error_lines import decode_parts
from runner.bundle.repeats import combine
from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint, schema_problem
from runner.errors import JournalError
from runner.plan import PlanSpec


class Header(msgspec.Struct, tag="header", tag_field="kind", kw_only=True):
    """The run's metadata (a bundle without measurements) and its planned matrix."""

    bundle: Bundle
    plan: PlanSpec


class PrefillLine(msgspec.Struct, tag="prefill", tag_field="kind"):
    """One finished prefill point."""

    point: PrefillPoint


class DecodeLine(msgspec.Struct, tag="decode", tag_field="kind", omit_defaults=True):
    """One finished decode cell; `repeat` counts from 0 and is left out of the line when 0."""

    cell: DecodeCell
    repeat: int = 0


Line = Header | PrefillLine | DecodeLine
_decoder = msgspec.json.Decoder(Line)
_encoder = msgspec.json.Encoder()


def journal_path(out: Path) -> Path:
    """Where the journal of the bundle at `out` lives: beside it."""
    return out.with_name(out.name.removesuffix(".json") + ".journal.jsonl")


class Journal:
    """Append-only record of one run; `points` and `cells` hold what it has so far."""

    def __init__(self, path: Path, header: Header, handle: BinaryIO | None = None) -> None:
        """Use `path` for a run described by `header` (call `create` or `load`, which open and lock it)."""
        self.path = path
        self.header = header
        self.points: dict[int, PrefillPoint] = {}
        self.cells: dict[tuple[int, int], DecodeCell] = {}
        self.later: dict[tuple[int, int, int], DecodeCell] = {}  # repeats after the first, by (C, N, repeat)
        self._handle = handle

    @classmethod
    def create(cls, path: Path, header: Header) -> Journal:
        """Start a new journal at `path`, refusing to overwrite one.

        An empty journal left by a run that could not write its first line (a full disk) holds
        nothing to resume, so it is replaced; a journal whose header cannot be written goes.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_if_empty(path)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise JournalError(f"{path} already exists: add --resume to continue that run, or choose another --out") from None
        journal = cls(path, header, _locked(path, os.fdopen(descriptor, "ab")))
        try:
            journal._append(header)
        except BaseException:
            with contextlib.suppress(OSError):  # closing flushes what the full disk refused, and fails again
                journal.close()
            path.unlink(missing_ok=True)
            raise
        return journal

    @classmethod
    def load(cls, path: Path, lock: bool = True) -> Journal:
        """Read a journal back (locked for appending unless `lock` is off); a torn final line is cut off."""
        if path.exists() and not path.is_file():
            raise JournalError(f"{path} is not a regular file")
        try:
            handle = _locked(path, path.open("r+b")) if lock else None
            data = path.read_bytes()
        except OSError as exc:
            raise JournalError(f"cannot read journal {path}: {exc.strerror}") from None
        try:
            entries, good_end = _entries(path, data)
        except JournalError:
            if handle:
                handle.close()
            raise
        if not entries or not isinstance(entries[0], Header):
            if handle:
                handle.close()
            if not data.strip():
                raise JournalError(f"{path} is empty: the run that made it never wrote its first line (a full disk?); "
                                   "delete it and start the run again")
            raise JournalError(f"{path} does not start with a run header")
        journal = cls(path, entries[0], handle)
        for entry in entries[1:]:
            journal._remember(entry)
        if handle:
            handle.truncate(good_end)  # a torn last line goes, so what is appended next starts a line
            handle.seek(good_end)
            if good_end and not data[:good_end].endswith(b"\n"):
                handle.write(b"\n")
                handle.flush()
        return journal

    def close(self) -> None:
        """Release the lock and the file."""
        if self._handle:
            self._handle.close()
            self._handle = None

    def record(self, item: PrefillPoint | DecodeCell, repeat: int = 0) -> None:
        """Append a finished point or cell (repeat `repeat` of it) and make it durable before returning."""
        entry = PrefillLine(item) if isinstance(item, PrefillPoint) else DecodeLine(item, repeat)
        self._append(entry)
        self._remember(entry)

    def finished(self, item: PrefillPoint | DecodeCell | None) -> bool:
        """True if `item` needs no measuring again: present and not Failed."""
        return item is not None and item.status != "Failed"

    def decode_at(self, context: int, concurrency: int, repeat: int = 0) -> DecodeCell | None:
        """One repeat of a decode cell, or None when it is not measured yet."""
        return self.cells.get((context, concurrency)) if repeat == 0 else self.later.get((context, concurrency, repeat))

    def measured(self, context: int, concurrency: int) -> list[DecodeCell]:
        """Every repeat of a cell measured so far, in repeat order."""
        found = (self.decode_at(context, concurrency, r) for r in range(self.header.plan.repeats))
        return [cell for cell in found if cell is not None]

    def bundle(self) -> Bundle:
        """The bundle as of now: the header plus every point and cell, in matrix order; a cell
        measured more than once holds all its repeats (runner/bundle/repeats.py)."""
        repeated = [self.measured(*key) for key in sorted(self.cells)]
        return msgspec.structs.replace(
            self.header.bundle,
            prefill=[self.points[c] for c in sorted(self.points)],
            decode=[cells[0] if len(cells) == 1 else combine(cells) for cells in repeated],
        )

    def _remember(self, entry: Line) -> None:
        if isinstance(entry, PrefillLine):
            self.points[entry.point.context_tokens] = entry.point
        elif isinstance(entry, DecodeLine) and entry.repeat:
            self.later[(entry.cell.context_tokens, entry.cell.concurrency, entry.repeat)] = entry.cell
        elif isinstance(entry, DecodeLine):
            self.cells[(entry.cell.context_tokens, entry.cell.concurrency)] = entry.cell

    def _append(self, entry: Line) -> None:
        """Write one line, durably; a line that would not load back (schema_problem) is refused."""
        if self._handle is None:
            raise JournalError(f"{self.path} was opened read-only")
        problem = schema_problem(entry)
        if problem is not None:
            raise JournalError(f"{self.path}: refusing to journal a line the run could not resume: {': '.join(problem)}")
        self._handle.write(_encoder.encode(entry) + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())


def _entries(path: Path, data: bytes) -> tuple[list[Line], int]:
    """The journal's entries and the byte offset where its last whole one ends.

    Only a last line without its newline is torn (every line is written with its newline in one
    write) and is cut off; any other line that does not load is an error naming it and its field.
    """
    entries: list[Line] = []
    good_end = offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        end = offset + len(raw) + (1 if number < len(lines) else 0)
        if raw.strip():
            try:
                entries.append(_decoder.decode(raw))
            except msgspec.DecodeError as exc:
                if number == len(lines):
                    break
                where, what = decode_parts(raw, exc)
                raise JournalError(f"{path}, line {number}: {where + ': ' if where else ''}{what}; the run cannot be "
                                   "resumed past it: delete that line to measure its item again") from None
            good_end = end
        offset = end
    return entries, good_end


def _remove_if_empty(path: Path) -> None:
    """Remove `path` if it is an empty regular file no runner holds: a journal that never got its header."""
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size:
            return
        with path.open("rb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(handle.fileno()).st_size == 0:
                path.unlink()
    except (OSError, BlockingIOError):
        return


def _locked(path: Path, handle: BinaryIO) -> BinaryIO:
    """`handle` with an exclusive lock on the journal, or a JournalError when another runner holds it."""
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise JournalError(f"{path} is in use by another runner measuring this run; "
                           "let it finish (or stop it) before resuming") from None
    return handle
