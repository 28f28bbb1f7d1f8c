"""Errors as users read them: one `error: file:where: message` line, msgspec's errors in those words.

The runner and sitegen both print through here, so a bad simulator config, a bad bundle and a
bad imported file are reported alike: the file, the `$.field` or line:column, what is wrong.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import msgspec

from runner.bundle.terminal_text import printable

# msgspec's "<what> - at `$.path`", its two kinds of <what> we reword, and its type names in words.
_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<where>[^`]*)`)?$", re.DOTALL)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$")
_EXPECTED = re.compile(r"^Expected `(?P<kinds>[^`]*)`(?P<limit>.*?)(?:, got `[^`]*`)?$")
_KINDS = {"float": "a number", "int": "a whole number", "str": "a string", "bool": "true or false",
          "object": "an object", "array": "a list", "null": "null"}
_SYNTAX = re.compile(r"(?:JSON is malformed: )?(.*?)(?: \(byte (\d+)\))?", re.DOTALL)


# The longest error line printed: a message naming ten thousand served models stays readable.
MAX_ERROR_CHARS = 2000


def print_error(line: str) -> None:
    """Print one `error: …` line on stderr, the form every command's errors take.

    What the line quotes may come from a server or a file, so its control and reordering
    characters are shown as escapes, and it is cut at MAX_ERROR_CHARS.
    """
    print(f"error: {printable(line, MAX_ERROR_CHARS)}", file=sys.stderr, flush=True)


def located(path: Path | str, where: str | None, message: str) -> str:
    """`file:where: message`, or `file: message` when no place inside the file applies."""
    return f"{path}:{where}: {message}" if where else f"{path}: {message}"


def validation_parts(exc: msgspec.ValidationError) -> tuple[str, str]:
    """msgspec's validation error as (`$.field`, what is wrong), e.g. ("$.seed", "expected a whole number")."""
    match = _AT.match(str(exc))
    assert match is not None  # the pattern matches any text
    what, where = match["what"], match["where"] or "$"
    if unknown := _UNKNOWN.match(what):
        return f"{where}.{unknown['name']}", "unknown field"
    if expected := _EXPECTED.match(what):
        kinds = " or ".join(_KINDS.get(k, k) for k in expected["kinds"].split(" | "))
        return where, f"expected {kinds}{expected['limit']}"
    return where, what


def decode_parts(data: bytes, exc: msgspec.DecodeError) -> tuple[str | None, str]:
    """A decode error as (where, what): the `$.field` of a wrong value, the line:column of broken JSON.

    A truncated file points just past its last character.
    """
    if isinstance(exc, msgspec.ValidationError):
        return validation_parts(exc)
    found = _SYNTAX.fullmatch(str(exc))
    assert found is not None  # the pattern matches any text
    reason, offset = found[1], found[2]
    if reason == "Input data was truncated":
        reason, offset = "unexpected end of file", len(data.rstrip())
    where = _line_column(data, int(offset)) if offset is not None else None
    return where, f"invalid JSON: {reason[:1].lower()}{reason[1:]}"


def _line_column(data: bytes, offset: int) -> str:
    """A byte offset as "line:column", both from 1, the column counted in characters as editors count it."""
    offset = min(offset, len(data))
    start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[start:offset].decode("utf-8", "replace")) + 1
    return f"{line}:{column}"
