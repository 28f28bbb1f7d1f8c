"""The speculative decoding and energy figures' formats: three significant digits, half up on the number as written."""

from __future__ import annotations

import pytest

from sitegen.views.figure_formats import joules, share, significant, watts


@pytest.mark.parametrize(("value", "text"), [
    (2.85, "2.85"), (2.5, "2.50"), (3, "3.00"), (0.000412, "0.000412"), (0.0543, "0.0543"), (12.345, "12.3"),
    (1234.5, "1,235"), (9.996, "10.00"), (2.845, "2.85"), (0.0, "0"), (None, "—"),
])
def test_significant_keeps_three_digits_and_rounds_half_up(value: float | None, text: str) -> None:
    assert significant(value) == text


def test_units() -> None:
    assert (joules(0.41234), joules(None)) == ("0.412 J", "—")
    assert (share(0.7244), share(1.0), share(None)) == ("72.4 %", "100.0 %", "—")
    assert (watts(612.44), watts(None)) == ("612.4 W", "—")
    assert significant(1e300).startswith("1,000,000") and significant(5e-324).endswith("0500"), "any finite figure prints"
