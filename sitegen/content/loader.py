"""Loading bundles from disk with errors that name the file and the field."""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from runner.bundle import files
from runner.bundle.display import VALUED
from runner.bundle.error_lines import decode_parts, validation_parts
from runner.bundle.redact import redact, redact_fields
from runner.bundle.schema import Bundle, decode_bundle, encode_bundle
from sitegen.errors import InputError

T = TypeVar("T")
# How far after "now" a measured_at may lie: clock skew, and a machine's local time taken as UTC
# (as importers take a time without a zone). A later date would sort a run above every real one.
FUTURE_ALLOWANCE = dt.timedelta(days=1)
# Dates stay objects in the builtins scrub checks: redact_fields leaves them alone, and each date
# as text would be one more distinct string to check.
_NOT_TEXT = (dt.datetime,)


def decode_bundle_file(path: Path, data: bytes) -> Bundle:
    """Decode one bundle's bytes, turning msgspec's errors into an InputError."""
    return read_bundle(path, data)[0]


def read_bundle(path: Path, data: bytes) -> tuple[Bundle, bool]:
    """decode_bundle_file's bundle, checked and scrubbed, and whether it was clean: held nothing to
    redact, so that the same bytes decode to it without the checks (decode_clean)."""
    bundle = decoded(path, data, decode_bundle)
    check_bundle(bundle, path)
    scrubbed = scrub(bundle)
    return scrubbed, scrubbed is bundle


def decode_clean(data: bytes) -> Bundle:
    """The bundle of bytes already read by read_bundle and found clean (the caller compares their
    hash): decoded alone, as the checks and the scrub would change nothing (a third of a read)."""
    return decode_bundle(data)


def validated(bundle: Bundle, path: Path) -> Bundle:
    """A bundle made in memory after the checks of one read from disk (the schema's ranges, then check_bundle)."""
    checked = decoded(path, encode_bundle(bundle), decode_bundle)
    check_bundle(checked, path)
    return checked


def read_json(path: Path, data: bytes) -> Any:
    """Any JSON document in data; broken JSON fails with the same line a broken bundle gets."""
    return decoded(path, data, msgspec.json.decode)


def decoded(path: Path, data: bytes, decode: Callable[[bytes], T]) -> T:
    """decode(data) with msgspec's errors as one InputError: the field of a wrong value, the line:column of broken JSON."""
    try:
        return decode(data)
    except msgspec.DecodeError as exc:  # a ValidationError too
        raise InputError(path, *decode_parts(data, exc)) from None
    except RecursionError:
        raise InputError(path, None, "invalid JSON: nested too deeply") from None


def validation_error(path: Path, exc: msgspec.ValidationError) -> InputError:
    """msgspec's validation error as one line naming the file and the `$.a.b` field."""
    return InputError(path, *validation_parts(exc))


def scrub(bundle: Bundle) -> Bundle:
    """Redact secrets from every text field (launch command, notes, error reasons, any other).

    Bundles enter sitegen here and through the importers, so no page or download can
    publish a secret, whatever a bundle or an imported file carries. Most bundles hold no
    secret: checking each distinct string once, remembered across bundles, tells so for a fraction
    of what walking the structs costs. Any string redaction changes takes the full walk, so the
    result is always redact_fields' own.
    """
    if all(map(_clean, _strings(msgspec.to_builtins(bundle, builtin_types=_NOT_TEXT)))):
        return bundle
    return redact_fields(bundle)


@functools.lru_cache(maxsize=1 << 14)
def _clean(text: str) -> bool:
    """Whether redaction leaves a string as it is; remembered, as runs share most strings (statuses, engines, launch commands)."""
    return redact(text) == text


def _strings(tree: Any) -> set[str]:
    """Every distinct string value in a struct's builtins (field names left out: they are not redacted).

    A loop over a stack rather than a call per value: most values are numbers, and a Python call
    for each cost half the check.
    """
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        for item in node.values() if type(node) is dict else node:
            kind = type(item)  # to_builtins gives exact builtin types (it refuses a str subclass)
            if kind is str:
                found.add(item)
            elif kind is dict or kind is list:
                stack.append(item)
    return found


def read_input(path: Path) -> bytes:
    """The bytes of an input file, or an InputError naming it (runner/bundle/files.py reads it)."""
    try:
        return files.read_input(path)
    except files.Unreadable as exc:
        raise InputError(path, None, str(exc)) from None


def load_bundle(path: Path) -> Bundle:
    """Read and validate the bundle at path."""
    return decode_bundle_file(path, read_input(path))


def utc_now() -> dt.datetime:
    """The time dates are checked against; tests replace it to build as of another moment."""
    return dt.datetime.now(dt.timezone.utc)


def check_not_future(moment: dt.datetime, path: Path | str, where: str, now: dt.datetime | None = None) -> None:
    """Refuse a measurement date more than FUTURE_ALLOWANCE after `now` (utc_now() by default).

    A build keeps the records of bundles it read before and does not check them again, which is
    safe: a date accepted once stays accepted as time goes on, and a refused one fails its build,
    which then keeps nothing.
    """
    now = now or utc_now()
    if moment > now + FUTURE_ALLOWANCE:
        raise InputError(path, where, f"{moment.isoformat()} is in the future: more than a day after "
                                      f"{now.astimezone(dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ}, when this was read")


def check_bundle(bundle: Bundle, path: Path, now: dt.datetime | None = None) -> None:
    """Checks the types cannot express: unique cells, values where a status promises them, printable
    totals, and dates in UTC's years 1 to 9999 and not in the future (as of `now`)."""
    if bundle.measured_at is not None:
        try:
            bundle.measured_at.astimezone(dt.timezone.utc)
        except OverflowError:
            raise InputError(path, "$.measured_at", "the date in UTC falls outside years 1 to 9999") from None
        check_not_future(bundle.measured_at, path, "$.measured_at", now)
    vram, gpus = bundle.hardware.vram_per_gpu_gb, bundle.hardware.gpu_count
    if vram is not None and not math.isfinite(vram * (gpus or 1)):
        raise InputError(path, "$.hardware.vram_per_gpu_gb", f"{vram:g} GB × {gpus} GPUs is too large a total")
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
        if cell.status in VALUED and cell.total_tok_s is None:
            raise InputError(path, f"$.decode[{i}].total_tok_s", f"a {cell.status} cell needs its total tok/s")
        key = (cell.context_tokens, cell.concurrency)
        if key in seen_cells:
            raise InputError(path, f"$.decode[{i}]", f"cell context {key[0]} × {key[1]} appears twice")
        seen_cells.add(key)
