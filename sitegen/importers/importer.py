"""What an importer is, and the one last step every import shares.

Each importer module declares an `Importer` (as Pelican's Readers declare theirs): its name,
how it recognises its input by content, and a read function that returns what the file states
(`Found`) or one file of a sweep. `finish` then applies the command line's options, scrubs
secrets once, names the bundle and validates it once, whatever the format.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

from runner.bundle.ids import run_id
from runner.bundle.schema import Bundle, Text
from sitegen.content.loader import check_not_future, scrub, validated, validation_error
from sitegen.errors import InputError
from sitegen.importers.options import ImportOptions, apply_options

T = TypeVar("T")
# What another tool's file may hold where a bundle takes a figure, a count, a concurrency or a name:
# declared on each format's Structs, so an impossible value is refused at the file's own field
# (NaN, infinity and negative figures, a count below zero, a name a bundle cannot hold).
FIGURE_MAX = 1e15  # far above any real figure, so a figure in seconds stays finite in ms
Figure = Annotated[float, msgspec.Meta(ge=0, le=FIGURE_MAX)]
Whole = Annotated[int, msgspec.Meta(ge=0)]
AtLeastOne = Annotated[int, msgspec.Meta(ge=1)]
Name = Annotated[Text, msgspec.Meta(min_length=1)]
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


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
    """Parsed JSON as `shape`; a missing, mistyped or impossible field is one error naming it (`$.a.b`), under `at`.

    Python's json reads NaN and Infinity, which msgspec's range check refuses in its own words;
    those are said plainly instead.
    """
    try:
        return msgspec.convert(data, shape)
    except msgspec.ValidationError as exc:
        error = validation_error(path, exc)
        where = error.where or "$"
        raise InputError(path, at + where[1:], _worded(error.message, value_at(data, where))) from None


def _worded(message: str, value: object) -> str:
    """msgspec's message about a number, with the number it refused; NaN and infinity said plainly."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"not a finite number ({value})"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{message}, got {value!r}"
    return message


def value_at(data: object, where: str) -> object:
    """The value at a `$.a[2].b` path of parsed JSON; None where the path leads nowhere."""
    for key, index in _STEP.findall(where.removeprefix("$")):
        if key and isinstance(data, dict):
            data = data.get(key)
        elif index and isinstance(data, list) and int(index) < len(data):
            data = data[int(index)]
        else:
            return None
    return data


def utc_moment(stamp: str | None, path: Path, where: str) -> dt.datetime | None:
    """An ISO date and time in UTC, not in the future; one without a zone (the benchmark machine's
    local time) is taken as UTC."""
    if not stamp:
        return None
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        raise InputError(path, where, f"expected an ISO date and time, got {stamp!r}") from None
    try:
        moment = moment.replace(tzinfo=dt.timezone.utc) if moment.tzinfo is None else moment.astimezone(dt.timezone.utc)
    except OverflowError:
        raise InputError(path, where, "the date in UTC falls outside years 1 to 9999") from None
    return checked_date(moment, path, where)


def checked_date(moment: dt.datetime, path: Path, where: str) -> dt.datetime:
    """A file's measurement date, refused at its own field when it lies in the future."""
    check_not_future(moment, path, where)
    return moment
