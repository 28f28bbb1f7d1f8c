"""How pages print the speculative decoding and energy figures, which span orders of magnitude (a J per
token at a long context is a thousandth of one at a short one): to three significant digits, rounded
half up on the number as written, as runner.bundle.formats rounds every other figure.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal

from runner.bundle import formats as f

DIGITS = 3
_WIDE = Context(prec=400)  # enough digits to round any finite float without overflowing


def significant(value: float | None) -> str:
    """Three significant digits, more only left of the point: "2.85", "0.000412", "2.50", "1,235"; "—" for None."""
    if value is None:
        return f.EMPTY
    exact = Decimal(repr(value))
    if not exact:
        return "0"
    places = Decimal(1).scaleb(min(0, exact.adjusted() - DIGITS + 1))
    return format(exact.quantize(places, rounding=ROUND_HALF_UP, context=_WIDE), ",f")


def share(value: float | None) -> str:
    """A rate of 0..1 as a percentage with one decimal: "72.4 %"."""
    return f.EMPTY if value is None else f"{f.one_decimal(value * 100)} %"


def joules(value: float | None) -> str:
    """Energy: "0.412 J"."""
    return f.EMPTY if value is None else f"{significant(value)} J"


def watts(value: float | None) -> str:
    """Power with one decimal: "612.4 W"."""
    return f.EMPTY if value is None else f"{f.one_decimal(value)} W"
