"""Loading bundles from disk with errors that name the file and the field."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from runner.redact import redact
from runner.schema import Bundle, decode_bundle
from sitegen.errors import InputError

T = TypeVar("T")


def decode_bundle_file(path: Path, data: bytes) -> Bundle:
    """Decode one bundle's bytes, turning msgspec's errors into an InputError."""
    bundle = _decoded(path, data, decode_bundle)
    check_bundle(bundle, path)
    return scrub(bundle)


def read_json(path: Path, data: bytes) -> Any:
    """Any JSON document in data; broken JSON fails with the same line a broken bundle gets."""
    return _decoded(path, data, msgspec.json.decode)


def _decoded(path: Path, data: bytes, decode: Callable[[bytes], T]) -> T:
    """decode(data) with msgspec's errors as one InputError: the field of a wrong value, the line:column of broken JSON."""
    try:
        return decode(data)
    except msgspec.ValidationError as exc:
        raise InputError(path, _field_of(str(exc)), _message_of(str(exc))) from None
    except msgspec.DecodeError as exc:
        raise _syntax_error(path, data, str(exc)) from None
    except RecursionError:
        raise InputError(path, None, "invalid JSON: nested too deeply") from None


def _syntax_error(path: Path, data: bytes, message: str) -> InputError:
    """msgspec's reason at the line:column of its "(byte N)"; a truncated file points just past its last character."""
    found = re.fullmatch(r"(?:JSON is malformed: )?(.*?)(?: \(byte (\d+)\))?", message, re.S)
    reason, offset = found[1], found[2]
    if reason == "Input data was truncated":
        reason, offset = "unexpected end of file", len(data.rstrip())
    where = _line_column(data, int(offset)) if offset is not None else None
    return InputError(path, where, f"invalid JSON: {reason[:1].lower()}{reason[1:]}")


def _line_column(data: bytes, offset: int) -> str:
    """A byte offset as "line:column", both from 1, the column counted in characters as editors count it."""
    offset = min(offset, len(data))
    start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[start:offset].decode("utf-8", "replace")) + 1
    return f"{line}:{column}"


def scrub(bundle: Bundle) -> Bundle:
    """Redact secrets from every free-text field (launch command, notes, error reasons).

    Bundles enter sitegen here and through the importers, so no page or download can
    publish a secret, whatever a bundle or an imported file carries.
    """
    def clean(text: str | None) -> str | None:
        return redact(text) if text else text

    return msgspec.structs.replace(
        bundle,
        launch_command=clean(bundle.launch_command),
        notes=clean(bundle.notes),
        prefill=[msgspec.structs.replace(p, error=clean(p.error)) if p.error else p for p in bundle.prefill],
        decode=[msgspec.structs.replace(c, error=clean(c.error)) if c.error else c for c in bundle.decode],
    )


def load_bundle(path: Path) -> Bundle:
    """Read and validate the bundle at path."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror}") from None
    return decode_bundle_file(path, data)


def check_bundle(bundle: Bundle, path: Path) -> None:
    """Checks the types cannot express: unique cells, and values where a status promises them."""
    seen_prefill: set[int] = set()
    for i, point in enumerate(bundle.prefill):
        if point.context_tokens in seen_prefill:
            raise InputError(path, f"$.prefill[{i}]", f"context {point.context_tokens} appears twice")
        seen_prefill.add(point.context_tokens)
    for i, point in enumerate(bundle.prefill):
        if point.status == "Valid" and point.prompt_tok_s is None:
            raise InputError(path, f"$.prefill[{i}].prompt_tok_s", "a Valid prefill point needs its prompt tok/s")
    seen_cells: set[tuple[int, int]] = set()
    for i, cell in enumerate(bundle.decode):
        if cell.status in ("Valid", "Requests queued") and cell.total_tok_s is None:
            raise InputError(path, f"$.decode[{i}].total_tok_s", f"a {cell.status} cell needs its total tok/s")
        key = (cell.context_tokens, cell.concurrency)
        if key in seen_cells:
            raise InputError(path, f"$.decode[{i}]", f"cell context {key[0]} × {key[1]} appears twice")
        seen_cells.add(key)


def _field_of(message: str) -> str | None:
    """The `$.a.b` path msgspec puts at the end of a validation message."""
    marker = " - at `"
    if marker in message:
        return message.rsplit(marker, 1)[1].rstrip("`")
    return "$"


def _message_of(message: str) -> str:
    return message.split(" - at `")[0]
