"""JSON and number text exactly as the standard library writes them, made by msgspec where it writes the same.

Python's float repr (which json.dumps and the csv module use) is a costly step of every page;
msgspec writes the same shortest digits much faster, but in other notations for numbers
below 1e-4 or from 1e16 up ("1e16", "0.00001" where repr writes "1e+16", "1e-05"). So
msgspec's text is taken as it is unless it holds such a number, and the standard library's
is made instead where it does: the bytes are always the standard library's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

_sorted = msgspec.json.Encoder(order="sorted")
# Digits all as "0", so that one search finds a number's shape whatever its digits.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


def _other_notation(data: bytes) -> bool:
    """Whether msgspec's JSON may hold a number that repr writes otherwise: one with an exponent or a
    decimal below 1e-4, whose shapes bytes' own searches find (a regular expression would cost as
    much as json.dumps itself). A string can hold them too ("#4e79a7", in every chart's colours):
    then only the shapes found outside strings count."""
    if not _has_shapes(data):
        return False
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")  # what is left of a quote delimits a string
    zeros = unescaped.translate(_DIGITS_AS_ZERO)
    return _outside_strings(unescaped, b"0.0000") or _outside_strings(zeros, b"0e0") or _outside_strings(zeros, b"0e-")


def _has_shapes(data: bytes) -> bool:
    """Whether the text holds a digit, "e" and a digit or minus, or "0.0000"."""
    if b"0.0000" in data:
        return True
    zeros = data.translate(_DIGITS_AS_ZERO)
    return b"0e0" in zeros or b"0e-" in zeros


def _outside_strings(text: bytes, shape: bytes) -> bool:
    """Whether `shape` occurs outside the strings of a JSON text whose escaped quotes and backslashes are
    taken out: where an even number of quotes precede it. Counting quotes leaves the text in one piece
    (splitting it at every quote made an object of each string, most of the check's time)."""
    quotes, counted = 0, 0
    at = text.find(shape)
    while at != -1:
        quotes += text.count(b'"', counted, at)
        if quotes % 2 == 0:
            return True
        counted, at = at, text.find(shape, at + 1)
    return False


def compact_json(value: Any) -> str:
    """json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).

    For values of str keys, numbers, strings, lists, tuples and None; the numbers finite, as a
    bundle's are (its decoder refuses others), since msgspec writes NaN as null where json raises.
    """
    try:
        data = _sorted.encode(value)
    except (TypeError, ValueError):  # a type msgspec does not encode, a lone surrogate
        data = None
    if data is None or _other_notation(data):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return data.decode()


def number_texts(numbers: Sequence[float | int | None]) -> list[str]:
    """Numbers as the csv module writes them (a float's repr, an int's digits, "" for None), all in one call."""
    data = msgspec.json.encode(numbers)
    texts = data[1:-1].replace(b"null", b"").decode().split(",") if numbers else []
    # Numbers alone: an "e" is an exponent; msgspec writes inf and NaN as null, like None.
    if b"e" in data or b"0.0000" in data or data.count(b"null") != numbers.count(None):
        return ["" if number is None else repr(number) for number in numbers]
    return texts
