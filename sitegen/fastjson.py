"""JSON and number text exactly as the standard library writes them, made by msgspec where it writes the same.

Python's float repr (which json.dumps and the csv module use) costs about 350 ns a number;
msgspec writes the same shortest digits ten times faster, but in other notations for numbers
below 1e-4 or from 1e16 up ("1e16", "0.00001" where repr writes "1e+16", "1e-05"). So
msgspec's text is taken as it is unless it holds such a number, and the standard library's
is made instead where it does: the bytes are always the standard library's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import msgspec

_sorted = msgspec.json.Encoder(order="sorted")
# A number msgspec may write otherwise than repr: one with an exponent, or below 1e-4 in decimals.
# JSON puts a number after "[", ":" or ","; a string that looks so only costs the slow way.
_OTHER_NOTATION = re.compile(rb"(?:^|[\[:,])-?(?:\d+(?:\.\d+)?e|0\.0000)")
# What such a number holds, found far faster by bytes' own search than by the pattern.
_TELLTALES = (b"0.0000", *(b"%de" % digit for digit in range(10)))


def _other_notation(data: bytes) -> bool:
    """Whether msgspec's JSON may hold a number repr writes otherwise: the quick search first, the pattern only on a find."""
    return any(telltale in data for telltale in _TELLTALES) and _OTHER_NOTATION.search(data) is not None


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
