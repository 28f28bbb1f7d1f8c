"""Loading bundles from disk with errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import msgspec

from runner.redact import redact
from runner.schema import Bundle, decode_bundle
from sitegen.errors import InputError, InputErrors


def decode_bundle_file(path: Path, data: bytes) -> Bundle:
    """Decode one bundle's bytes, turning msgspec's errors into an InputError."""
    try:
        bundle = decode_bundle(data)
    except msgspec.ValidationError as exc:
        raise InputError(path, _field_of(str(exc)), _message_of(str(exc))) from None
    except msgspec.DecodeError as exc:
        raise InputError(path, None, f"invalid JSON: {exc}") from None
    check_bundle(bundle, path)
    return scrub(bundle)


def scrub(bundle: Bundle) -> Bundle:
    """Redact secrets from the launch command, so no page or download can publish one."""
    if bundle.launch_command is None:
        return bundle
    return msgspec.structs.replace(bundle, launch_command=redact(bundle.launch_command))


def load_bundle(path: Path) -> Bundle:
    """Read and validate the bundle at path."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror}") from None
    return decode_bundle_file(path, data)


def load_bundles(folder: Path) -> list[tuple[Path, Bundle]]:
    """Every `*.json` bundle in folder, sorted by file name; all errors are collected first."""
    errors: list[InputError] = []
    loaded: list[tuple[Path, Bundle]] = []
    seen: dict[str, Path] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            bundle = load_bundle(path)
        except InputError as exc:
            errors.append(exc)
            continue
        if bundle.id in seen:
            errors.append(InputError(path, "$.id", f"id {bundle.id!r} is already used by {seen[bundle.id]}"))
            continue
        seen[bundle.id] = path
        loaded.append((path, bundle))
    if errors:
        raise InputErrors(errors)
    return loaded


def check_bundle(bundle: Bundle, path: Path) -> None:
    """Checks the types cannot express: unique cells, errors only on Failed."""
    seen_prefill: set[int] = set()
    for i, point in enumerate(bundle.prefill):
        if point.context_tokens in seen_prefill:
            raise InputError(path, f"$.prefill[{i}]", f"context {point.context_tokens} appears twice")
        seen_prefill.add(point.context_tokens)
    seen_cells: set[tuple[int, int]] = set()
    for i, cell in enumerate(bundle.decode):
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
