"""Reading a bundle file for the checker: bounded, strictly decoded, every failure one problem naming the file.

Strict means the schema's types and ranges (runner/bundle/schema.py), the loader's checks that
types cannot express (sitegen/content/loader.py), and no field the schema does not know: the
build ignores one, so a misspelt figure would vanish from the page without a word.
"""

from __future__ import annotations

import functools
import types
import typing
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from runner.bundle import files
from runner.bundle.schema import Bundle
from sitegen.check.fields import Chain, spelt
from sitegen.check.verdict import Problem
from sitegen.content import loader
from sitegen.errors import InputError

# The largest file read as a bundle: far above any bundle the runner writes, so that a huge file
# is refused from its size instead of exhausting memory.
MAX_BUNDLE_BYTES = 256 << 20


class Unknown(NamedTuple):
    """A key of the file's JSON that the schema has no field for: where the object holding it lies, and its value."""

    parent: Chain
    key: str
    value: Any

    @property
    def where(self) -> str:
        """`$.run.extra`: the key's own path."""
        return spelt((self.parent, self.key))


class Decoded(msgspec.Struct, kw_only=True):
    """A bundle file as read: its JSON as plain data (None where a bundle already read was found to hold
    only known keys), its bundle (None where it did not decode) and the keys the schema does not know,
    and the problems."""

    raw: Any = None
    bundle: Bundle | None = None
    unknown: list[Unknown] = []
    problems: list[Problem] = []


def read_bounded(path: Path) -> bytes:
    """The file's bytes, read with runner.bundle.files.read_input once its size is known to be within MAX_BUNDLE_BYTES."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError as exc:
        raise files.Unreadable(f"cannot read: {exc.strerror or exc}") from None
    if size > MAX_BUNDLE_BYTES:
        raise files.Unreadable(f"too large to be a bundle: {size:,} bytes, more than {MAX_BUNDLE_BYTES:,}")
    return files.read_input(path)


def decode(path: Path, data: bytes, read: Bundle | None = None) -> Decoded:
    """Strictly decode a bundle file's bytes: JSON, the schema, the loader's checks, no unknown field.
    `read`: the bundle the loader decoded from the same bytes and checked (its schema and checks are not
    done again)."""
    if read is not None and known_only(data):
        return Decoded(bundle=read)
    try:
        raw = loader.read_json(path, data)
        bundle = read if read is not None else loader.decoded(path, data, loader.decode_bundle)
    except InputError as exc:
        return Decoded(problems=[Problem(exc.path, exc.where, exc.message)])
    try:
        unknown = unknown_fields(raw, bundle)
    except RecursionError:
        return Decoded(problems=[Problem(str(path), None, "invalid JSON: nested too deeply")])
    problems = [Problem(str(path), field.where, "unknown field: the schema has no such field") for field in unknown]
    try:
        if read is None:
            loader.check_bundle(bundle, path)
    except InputError as exc:
        problems.append(Problem(exc.path, exc.where, exc.message))
    return Decoded(raw=raw, bundle=bundle, unknown=unknown, problems=problems)


def unknown_fields(raw: Any, value: Any, where: Chain = None) -> list[Unknown]:
    """The keys in `raw` (plain JSON, lying at `where`) that `value` (the Struct it decoded to) has no field for."""
    found: list[Unknown] = []
    if isinstance(value, msgspec.Struct) and type(raw) is dict:
        names, nested = _fields(type(value))
        if not names.issuperset(raw):
            found += [Unknown(where, key, raw[key]) for key in raw if key not in names]
        for name in nested:
            if name in raw:
                found += unknown_fields(raw[name], getattr(value, name), (where, name))
    elif isinstance(value, list) and type(raw) is list:
        for index, (item, decoded) in enumerate(zip(raw, value)):
            found += unknown_fields(item, decoded, (where, index))
    return found


@functools.cache
def _fields(kind: type[msgspec.Struct]) -> tuple[frozenset[str], tuple[str, ...]]:
    """A Struct type's field names, and those whose values can hold a Struct: the only ones that can
    hide an unknown key, so a list of numbers is never walked."""
    hints = typing.get_type_hints(kind)
    return frozenset(kind.__struct_fields__), tuple(name for name in kind.__struct_fields__ if _holds_struct(hints[name]))


def _holds_struct(hint: Any) -> bool:
    """Whether a type (a Struct, or a list, union or dict of one, at any depth) can hold a Struct."""
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return True
    return any(_holds_struct(arg) for arg in typing.get_args(hint))


def known_only(data: bytes) -> bool:
    """Whether bundle JSON holds no key the schema does not know, at any depth: the schema's twin that
    refuses unknown keys decodes it (in C, as fast as the build's own decode) where walking it would
    first need the file decoded again as plain data."""
    try:
        _strict_decoder().decode(data)
    except msgspec.DecodeError:  # a ValidationError too: the first unknown key, or any other reason
        return False
    return True


@functools.cache
def _strict_decoder() -> msgspec.json.Decoder:
    """A decoder of Bundle's strict twin: each Struct the schema reaches, subclassed to forbid unknown
    fields, its fields' types naming the twins. A field's type is set once every twin exists, since a
    cell holds its repeats (msgspec reads a Struct's types when a decoder first needs them)."""
    kinds: dict[type[msgspec.Struct], None] = {}
    _reached(Bundle, kinds)
    twins = {kind: msgspec.defstruct(f"Strict{kind.__name__}", [], bases=(kind,), forbid_unknown_fields=True) for kind in kinds}
    for kind, twin in twins.items():
        hints = typing.get_type_hints(kind, include_extras=True)
        twin.__annotations__ = {name: _twinned(hints[name], twins) for name in kind.__struct_fields__}
    return msgspec.json.Decoder(twins[Bundle])


def _reached(hint: Any, kinds: dict[type[msgspec.Struct], None]) -> None:
    """Add every Struct type a type can hold, at any depth, to `kinds` (in the order met)."""
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        if hint not in kinds:
            kinds[hint] = None
            for field in typing.get_type_hints(hint, include_extras=True).values():
                _reached(field, kinds)
        return
    for arg in typing.get_args(hint):
        _reached(arg, kinds)


def _twinned(hint: Any, twins: dict[type[msgspec.Struct], type[msgspec.Struct]]) -> Any:
    """A type with each Struct in it replaced by its twin; its constraints (Annotated) kept."""
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return twins[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not args or origin is typing.Literal:
        return hint
    if origin is typing.Annotated:
        return typing.Annotated[(_twinned(args[0], twins), *hint.__metadata__)]
    swapped = tuple(_twinned(arg, twins) for arg in args)
    return typing.Union[swapped] if origin in (typing.Union, types.UnionType) else origin[swapped]
