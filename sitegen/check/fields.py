"""Where each measured record of a bundle lives: the `$.decode[3].repeats[1]` paths that error lines name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from runner.bundle.schema import MAX_TOKENS, Bundle, DecodeCell, PrefillPoint

# Where a value of the file's JSON lies: the chain (parent, key or index) from the document's root
# (None), spelt out as `$.decode[3].server` only where a problem is found there.
Chain = tuple[Any, str | int] | None

# The whole numbers of a record that the schema leaves unbounded.
COUNTS = ("concurrency", "completed", "output_tokens", "prompt_tokens")


class Window(msgspec.Struct, frozen=True):
    """One decode record as the bundle holds it: a cell, or one repeat of a cell measured several times.
    Its path (`where`) is spelt out only for a problem: most records have none."""

    index: int
    cell: DecodeCell
    repeat: int
    # The cell that holds this repeat; None for a cell itself.
    parent: DecodeCell | None = None

    @property
    def where(self) -> str:
        """`$.decode[3]`, or `$.decode[3].repeats[1]` for a repeat."""
        return cell_path(self.index) if self.parent is None else f"{cell_path(self.index)}.repeats[{self.repeat}]"


# Each record type's fields among COUNTS.
_COUNTED = {kind: tuple(name for name in COUNTS if name in kind.__struct_fields__) for kind in (DecodeCell, PrefillPoint)}


def oversized(record: DecodeCell | PrefillPoint) -> list[str]:
    """The counts of a record above MAX_TOKENS, the schema's bound on tokens: more than any server gives,
    and too large to be turned into a float, so no relation is judged with them."""
    counted = _COUNTED[type(record)]
    for name in counted:
        if (getattr(record, name) or 0) > MAX_TOKENS:
            return [name for name in counted if (getattr(record, name) or 0) > MAX_TOKENS]
    return []


def cell_path(index: int) -> str:
    """`$.decode[3]`."""
    return f"$.decode[{index}]"


def prefill_path(index: int) -> str:
    """`$.prefill[2]`."""
    return f"$.prefill[{index}]"


def spelt(chain: Chain) -> str:
    """`$.decode[3].error` from a chain of keys and indexes."""
    steps: list[str] = []
    while chain is not None:
        chain, step = chain
        steps.append(f"[{step}]" if type(step) is int else f".{step}")
    return "$" + "".join(reversed(steps))


def windows(bundle: Bundle) -> Iterator[Window]:
    """Every window the bundle records: each cell measured once, and each repeat of a cell measured several times."""
    for index, cell in enumerate(bundle.decode):
        if isinstance(cell.repeats, list) and cell.repeats:
            for repeat, measured in enumerate(cell.repeats):
                yield Window(index, measured, repeat, cell)
        else:
            yield Window(index, cell, 0)


def figures(bundle: Bundle) -> Iterator[Window]:
    """Every record with figures of its own: each cell (a repeated one's are its repeats' medians) and each repeat."""
    for index, cell in enumerate(bundle.decode):
        yield Window(index, cell, 0)
        for repeat, measured in enumerate(cell.repeats or ()):
            yield Window(index, measured, repeat, cell)
