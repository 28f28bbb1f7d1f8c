"""fastjson writes exactly the standard library's text: json.dumps' for compact JSON, repr for CSV numbers."""

from __future__ import annotations

import json
import random
import struct

import pytest

from sitegen.support.fastjson import _other_notation, compact_json, number_texts

# Numbers where msgspec's notation differs from repr's, and their neighbours where it does not.
EDGES = [1e16, 9999999999999998.0, 1e-05, 0.0001, 9e-05, 2.5e-07, 1e22, 5e-324, 1.7976931348623157e308,
         0.1, 100.0, 80.0, 1e15, 123456789012345678.0, 0.0, -0.0, -1e-05, 10.00001, 297.3]


def reference(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def random_floats(count: int, seed: int) -> list[float]:
    """Floats of every magnitude: random bit patterns, rounded figures and plain fractions."""
    rng = random.Random(seed)
    found: list[float] = []
    while len(found) < count:
        kind = rng.random()
        if kind < 0.3:
            value = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        elif kind < 0.7:
            value = round(rng.random() * 10 ** rng.randint(-12, 22), rng.randint(0, 6))
        else:
            value = rng.random() * 10 ** rng.randint(-7, 18)
        if value == value and abs(value) != float("inf"):
            found.append(value)
    return found


def test_compact_json_is_json_dumps_for_numbers_of_every_magnitude() -> None:
    for value in EDGES + random_floats(20_000, 1):
        assert compact_json({"x": [1, value], "y": value}) == reference({"x": [1, value], "y": value}), value


def test_compact_json_is_json_dumps_for_strings_keys_and_nesting() -> None:
    text = "".join(map(chr, range(0x3000))) + "\u2028\u2029😀"
    figure = {"b": [None, True, False, ("t", 2)], "a": {text: text, "é": "0e5 1e+16 :1e3 [0.00001"}, "": -3}
    assert compact_json(figure) == reference(figure)
    keys = {chr(c): c for c in (0x7f, 0xe9, 0xffff, 0x10000, 0x41, 0x5a, 0x61)}
    assert compact_json(keys) == reference(keys)


def test_compact_json_tells_numbers_from_strings_with_quotes_and_backslashes() -> None:
    rng = random.Random(3)
    for _ in range(5_000):
        words = ["".join(rng.choice('\\"e0-.,:[') for _ in range(rng.randint(0, 6))) for _ in range(3)]
        value = {words[0]: [words[1], rng.choice(EDGES)], "n": rng.choice(EDGES), words[2]: words[1]}
        assert compact_json(value) == reference(value), value


def test_compact_json_takes_the_standard_way_for_what_msgspec_cannot_write() -> None:
    with pytest.raises(TypeError):
        compact_json({"x": object()})
    assert compact_json({"x": "\ud800"}) == reference({"x": "\ud800"})


def test_number_texts_are_what_the_csv_module_writes() -> None:
    values: list[float | int | None] = [*EDGES, *random_floats(20_000, 2), None, 3, 10**30, float("inf"), float("nan")]
    expected = ["" if v is None else repr(v) for v in values]
    assert [t for start in range(0, len(values), 7) for t in number_texts(values[start:start + 7])] == expected
    assert number_texts([]) == []
    assert number_texts([None, None]) == ["", ""]


def test_only_a_number_in_another_notation_takes_the_slow_way() -> None:
    typical = b'{"colorway":["#4e79a7"],"launch":"--util 0.872320 --x=\\"1e5\\"","y":[0.0001,297.3,1000000000000000.0]}'
    assert not _other_notation(typical)
    assert all(_other_notation(b'{"y":[1,%s]}' % number) for number in (b"1e16", b"2.5e-7", b"0.00001", b"-0.00009"))
