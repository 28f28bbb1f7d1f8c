"""Number, label and date formats, checked against values the seed pages print."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from runner.bundle import formats as f


@pytest.mark.parametrize(("value", "text"), [
    (164.1, "164.1"), (1621.8, "1,621.8"), (9107.0, "9,107.0"), (5912.7, "5,912.7"), (2.3, "2.3"),
    (26500.0, "26.5K"), (12000.0, "12K"), (10500.0, "10.5K"), (21700.0, "21.7K"), (None, "—"),
])
def test_total_tok_s(value: float | None, text: str) -> None:
    assert f.tok_s(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (9107.0, "9,107"), (7959.0, "7,959"), (6110.0, "6,110"), (26500.0, "26.5K"), (12000.0, "12K"),
])
def test_prefill_items_round_to_whole_numbers_under_ten_thousand(value: float, text: str) -> None:
    assert f.prefill_tok_s(value) == text


@pytest.mark.parametrize("text", ["164.1", "1,621.8", "26.5K", "12K", "9,107.0"])
def test_tok_s_parses_back_to_the_same_text(text: str) -> None:
    assert f.tok_s(f.parse_tok_s(text)) == text


@pytest.mark.parametrize(("tokens", "label"), [
    (8192, "8K"), (257024, "251K"), (1043456, "1019K"), (1048576, "1024K"), (1000, "1000"), (1536, "1.5K"),
])
def test_context_labels(tokens: int, label: str) -> None:
    assert f.context_label(tokens) == label
    assert f.parse_context_label(label) == tokens


def test_latencies_counts_and_durations() -> None:
    assert f.ms_whole(1030.0) == "1,030 ms"
    assert f.ms_whole(62.0) == "62 ms"
    assert f.ms_whole(285550.0) == "285,550 ms"
    assert f.ms_tenth(6.1) == "6.1 ms"
    assert f.ms_tenth(435.3) == "435.3 ms"
    assert f.one_decimal(0.9) == "0.9"
    assert f.one_decimal(128.0) == "128.0"
    assert f.count(177409) == "177,409"
    assert f.count(0) == "0"
    assert f.seconds_tenth(29.9) == "29.9 s"
    assert f.seconds_setting(30.0) == "30 s"
    assert f.tokens_setting(4096) == "4,096 tokens"


def test_rounding_is_half_up_not_bankers() -> None:
    assert f.ms_tenth(6.05) == "6.1 ms"
    assert f.tok_s(0.25) == "0.3"


def test_vram_total_has_no_thousands_comma() -> None:
    assert f.vram(141.0, 2) == "282 GB (2 × 141 GB)"
    assert f.vram(141.0, 8) == "1128 GB (8 × 141 GB)"
    assert f.vram(80.0, None) == "80 GB"


def test_dates() -> None:
    when = dt.datetime(2026, 9, 3, 14, 23, tzinfo=dt.timezone.utc)
    assert f.measured_at(when) == "Sep 3, 2026, 14:23 UTC"
    assert f.parse_measured_at("Sep 17, 2026, 20:13 UTC") == dt.datetime(2026, 9, 17, 20, 13, tzinfo=dt.timezone.utc)
    other_zone = dt.datetime(2026, 9, 3, 16, 23, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert f.measured_at(other_zone) == "Sep 3, 2026, 14:23 UTC"
    with pytest.raises(ValueError):
        f.parse_measured_at("3 Sep 2026")


def test_fast_rounding_agrees_with_decimal_half_up_on_every_kind_of_value() -> None:
    """Float formatting must print what Decimal half-up on the repr prints: random figures of every
    size, values written exactly on a half ("0.05", "2.675") or a hair off one, negatives, huge
    values and reprs with an exponent; and a figure prints under 10,000 exactly when it rounds so."""
    import random

    rng = random.Random(20261201)
    values = [rng.uniform(0, 10 ** rng.randint(0, 9)) for _ in range(20_000)]
    values += [round(rng.uniform(0, 10_000), rng.randint(0, 4)) for _ in range(20_000)]
    halves = [float(f"{rng.randint(0, 99_999)}.{rng.randint(0, 99)}5") for _ in range(5_000)]
    values += halves + [math.nextafter(v, math.inf) for v in halves[:1_000]] + [math.nextafter(v, 0) for v in halves[:1_000]]
    values += [-v for v in values[:2_000]] + [0.0, -0.0, 1e-7, 2.5e-5, 1e16, 1e300, 9999.95, 9999.949999, 0.005, 2.675, 12_000]
    for value in values:
        for places in (0, 1, 2):
            assert f._fixed(value, places) == f"{f._round_decimal(value, places):,.{places}f}", (value, places)
        assert f._under_ten_thousand(value, f._fixed(value, 1)) == (f._round_decimal(value, 1) < 10_000), value
