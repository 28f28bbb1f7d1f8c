"""What an importer is, and the one last step every import shares.

Each importer module declares an `Importer` (as Pelican's Readers declare theirs): its name,
how it recognises its input by content, and a read function that returns what the file states
(`Found`) or one file of a sweep. `finish` then applies the command line's options, scrubs
secrets once, names the bundle and validates it once, whatever the format.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

from runner.bundle.ids import run_id
from runner.bundle.schema import Bundle
from sitegen.errors import InputError
from sitegen.importers.options import ImportOptions, apply_options
from sitegen.loader import scrub, validated, validation_error

T = TypeVar("T")
# A figure another tool wrote: a finite number that is not negative (NaN and infinity are refused).
Figure = Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]


class Source(msgspec.Struct, frozen=True):
    """One input file as importers see it: its path, its text and, when it is JSON, the parsed document."""

    path: Path
    text: str
    data: Any = None  # the parsed JSON; None when the text is not JSON
    is_json: bool = False


class Found(msgspec.Struct, frozen=True):
    """A bundle exactly as its file states it, with how to name it and what to check once it is valid."""

    bundle: Bundle
    name: Callable[[Bundle], str]  # the id of the finished bundle (options applied) unless --id gives one
    # Checks of the file against itself that need a valid bundle (a captured page's matrix against its table).
    confirm: Callable[[Bundle], None] | None = None


class Importer(msgspec.Struct, frozen=True):
    """One format: its name in messages, whether a source is of it, and how to read one."""

    name: str
    recognises: Callable[[Source], bool]
    read: Callable[[Source], Any]  # a Found, or a SweepFile for the tools that write one file per level
    folder_files: str | None = None  # glob of this format's files inside a results folder


def slug_id(*parts: str | None) -> str:
    """An imported run's id: a slug of the known parts ("model-gpu-tool-date")."""
    return run_id(*parts)


def finish(found: Found, options: ImportOptions, path: Path) -> Bundle:
    """The imported bundle: options applied, secrets scrubbed, named, validated, confirmed; once each."""
    bundle = scrub(apply_options(found.bundle, options))
    bundle = validated(msgspec.structs.replace(bundle, id=options.id or found.name(bundle)), path)
    if found.confirm is not None:
        found.confirm(bundle)
    return bundle


def decode(data: object, shape: type[T], path: Path, at: str = "$") -> T:
    """Parsed JSON as `shape`; a missing or mistyped field is one error naming it (`$.a.b`), under `at`."""
    try:
        return msgspec.convert(data, shape)
    except msgspec.ValidationError as exc:
        error = validation_error(path, exc)
        if at != "$" and error.where and error.where.startswith("$"):
            error = type(error)(path, at + error.where[1:], error.message)
        raise error from None


def utc_moment(stamp: str | None, path: Path, where: str) -> dt.datetime | None:
    """An ISO date and time in UTC; one without a zone (the benchmark machine's local time) is taken as UTC."""
    if not stamp:
        return None
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        raise InputError(path, where, f"expected an ISO date and time, got {stamp!r}") from None
    return moment.replace(tzinfo=dt.timezone.utc) if moment.tzinfo is None else moment.astimezone(dt.timezone.utc)
