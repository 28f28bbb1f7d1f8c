"""Number, label and date formats exactly as the published pages show them.

Each formatter has an inverse parser used by the page importer, so that a
value read from a page prints back to the same text.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal

EMPTY = "—"
# Enough digits to round any finite float (up to ~1.8e308) to a few places without overflowing.
_WIDE = Context(prec=400)

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


_SCALE = (1, 10, 100)  # 10 ** places
_SPECS = (",.0f", ",.1f", ",.2f")  # the format of each number of places, made once rather than per figure
_PLAIN = (".0f", ".1f", ".2f")  # the same without thousands commas


def _fixed(value: float, places: int) -> str:
    """`value` with `places` decimals and thousands commas, rounded half up as people expect
    ("0.05" -> "0.1"), not Python's half-even.

    Half up applies to the number as written (its shortest repr). Float formatting rounds the
    float's exact value, which lies on the same side of every half as its repr unless both are
    within a hair of one, so only such values (and huge or non-finite ones) take the exact, and
    slower, Decimal path: a run page formats hundreds of figures.
    """
    scaled = value * _SCALE[places]
    # Below 1e9 the product is off by < 1.2e-7: a margin of 1e-6 leaves the side of the half certain.
    if -1e9 < scaled < 1e9 and abs(scaled % 1.0 - 0.5) > 1e-6:
        # Under 999 no comma can show, and a format without grouping is a third cheaper: most figures are.
        return format(value, _PLAIN[places] if -999 < value < 999 else _SPECS[places])
    return format(_round_decimal(value, places), _SPECS[places])


def _under_ten_thousand(value: float, tenths: str) -> bool:
    """Whether a figure prints under 10,000 at one decimal (`tenths`: 9,999.96 does not, it rounds up)."""
    return value < 10_000 and tenths != "10,000.0"


def _round_decimal(value: float, places: int) -> Decimal:
    """Round half up through Decimal: exact for every float, and for the page formats that need a Decimal."""
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP, context=_WIDE)


def _trim(number: str) -> str:
    """Drop a trailing ".0" ("12.0" -> "12")."""
    return number[:-2] if number.endswith(".0") else number


@functools.lru_cache(maxsize=1024)
def context_label(tokens: int) -> str:
    """A context length as pages and logs print it: tokens / 1024 with a K ("251K" = 257,024).

    Remembered: a run has a few contexts, and a page labels each of its ~60 cells and table rows by one."""
    if tokens % 1024 == 0:
        return f"{tokens // 1024}K"
    if tokens < 1024:
        return str(tokens)
    tenths = (Decimal(tokens) / 1024).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{tenths}".removesuffix(".0") + "K"


def parse_context_label(label: str) -> int:
    """Inverse of context_label: "8K" -> 8192, "1000" -> 1000."""
    text = label.strip().replace(",", "")
    if text.upper().endswith("K"):
        number = float(text[:-1])
        if not math.isfinite(number):
            raise ValueError(f"not a finite number: {label!r}")
        return int(round(number * 1024))
    return int(text)


def parse_number(text: str) -> float:
    """A finite number ("30", "4096.5"); ValueError for anything else, "nan" and "1e400" included."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def tok_s(value: float | None) -> str:
    """Throughput: one decimal with commas under 10,000 ("9,107.0"), else "26.5K" / "12K"."""
    if value is None:
        return EMPTY
    tenths = _fixed(value, 1)
    if _under_ten_thousand(value, tenths):
        return tenths
    return _trim(_fixed(value / 1000, 1)) + "K"


def prefill_tok_s(value: float | None) -> str:
    """Prefill items round tok/s under 10,000 to whole numbers ("9,107"); larger as tok_s."""
    if value is None:
        return EMPTY
    if _under_ten_thousand(value, _fixed(value, 1)):
        return _fixed(value, 0)
    return tok_s(value)


def parse_tok_s(text: str) -> float:
    """Inverse of tok_s/prefill_tok_s: "26.5K" -> 26500.0, "1,621.8" -> 1621.8."""
    clean = text.strip().replace(",", "")
    if clean.endswith("K"):
        return parse_number(str(Decimal(clean[:-1]) * 1000))
    return parse_number(clean)


def cell_label(context_tokens: int, concurrency: int) -> str:
    """A decode cell as pages name it: "8K × 64"."""
    return f"{context_label(context_tokens)} × {concurrency}"


def ms_whole(value: float | None) -> str:
    """Whole milliseconds with commas: "1,030 ms"."""
    return EMPTY if value is None else f"{_fixed(value, 0)} ms"


def ms_tenth(value: float | None) -> str:
    """Milliseconds with one decimal: "6.1 ms"."""
    return EMPTY if value is None else f"{_fixed(value, 1)} ms"


def one_decimal(value: float | None) -> str:
    """A plain one-decimal figure, such as average active requests: "16.0"."""
    return EMPTY if value is None else _fixed(value, 1)


def count(value: int | None) -> str:
    """A count with thousands commas: "177,409" (a number that has none is written by str, which is cheaper than a format)."""
    if value is None:
        return EMPTY
    return str(value) if type(value) is int and -1000 < value < 1000 else f"{value:,}"


def seconds_tenth(value: float | None) -> str:
    """Measured duration: "30.0 s"."""
    return EMPTY if value is None else f"{_fixed(value, 1)} s"


def plain_number(value: float) -> str:
    """A number without needless decimals: 141.0 -> "141", 80.5 -> "80.5"."""
    return _trim(f"{_round_decimal(value, 2).normalize():f}") if value != int(value) else str(int(value))


def seconds_setting(value: float) -> str:
    """A setting in seconds: "30 s"."""
    return f"{plain_number(value)} s"


def tokens_setting(value: int) -> str:
    """A token budget: "4,096 tokens"."""
    return f"{value:,} tokens"


def vram(per_gpu_gb: float, gpu_count: int | None) -> str:
    """Total and per-GPU memory: "282 GB (2 × 141 GB)"; the total carries no thousands comma."""
    if not gpu_count:
        return f"{plain_number(per_gpu_gb)} GB"
    return f"{plain_number(per_gpu_gb * gpu_count)} GB ({gpu_count} × {plain_number(per_gpu_gb)} GB)"


def measured_at(value: dt.datetime) -> str:
    """A UTC timestamp as "Sep 3, 2026, 14:23 UTC"."""
    utc = value.astimezone(dt.timezone.utc)
    return f"{_MONTHS[utc.month - 1]} {utc.day}, {utc.year}, {utc:%H:%M} UTC"


# A date as measured_at prints it; the page importer also looks for it inside glued lines.
DATE_RE = re.compile(r"([A-Z][a-z]{2}) (\d{1,2}), (\d{4}), (\d{2}):(\d{2}) UTC")


def parse_measured_at(text: str) -> dt.datetime:
    """Inverse of measured_at; raises ValueError on anything else."""
    match = DATE_RE.fullmatch(text.strip())
    if not match or match.group(1) not in _MONTHS:
        raise ValueError(f"not a date like 'Sep 3, 2026, 14:23 UTC': {text!r}")
    month = _MONTHS.index(match.group(1)) + 1
    return dt.datetime(int(match.group(3)), month, int(match.group(2)), int(match.group(4)), int(match.group(5)), tzinfo=dt.timezone.utc)


def plain_number_commas(value: float) -> str:
    """A reader's target as typed, with thousands commas: 1000.0 -> "1,000", 2.5 -> "2.5"."""
    whole, point, fraction = plain_number(value).partition(".")
    return f"{int(whole):,}{point}{fraction}"


def usd(value: float | None) -> str:
    """US dollars with cents: "$0.23", "$1,204.50"; a cost that rounds to nothing is "< $0.01"."""
    if value is None:
        return EMPTY
    cents = _fixed(value, 2)
    if cents == "0.00" and value > 0:
        return "< $0.01"
    return f"${cents}"
