"""Where each measured record of a bundle lives: the `$.decode[3].repeats[1]` paths that error lines name."""

from __future__ import annotations

import operator
from typing import Any

import msgspec

from runner.bundle.schema import MAX_TOKENS, Bundle, DecodeCell, PrefillPoint

# Where a value of the file's JSON lies: the chain (parent, key or index) from the document's root
# (None), spelt out as `$.decode[3].server` only where a problem is found there.
Chain = tuple[Any, str | int] | None

# (where, message) pairs, or (field, message) pairs of one record: checker.py names the file and the record.
# Lists rather than generators: most records break no relation, and a generator costs more to make and
# drain than an empty list.
Found = list[tuple[str, str]]

# The whole numbers of a record that the schema leaves unbounded.
COUNTS = ("concurrency", "completed", "output_tokens", "prompt_tokens")


class Record(msgspec.Struct, frozen=True):
    """One decode record as the bundle holds it: a cell, or one repeat of a cell measured several times,
    with its counts above the schema's bound (`oversized`). Its path (`where`) is spelt out only for a
    problem: most records have none."""

    index: int
    cell: DecodeCell
    repeat: int
    # The cell that holds this repeat; None for a cell itself.
    parent: DecodeCell | None
    oversized: list[str]

    @property
    def where(self) -> str:
        """`$.decode[3]`, or `$.decode[3].repeats[1]` for a repeat."""
        return cell_path(self.index) if self.parent is None else f"{cell_path(self.index)}.repeats[{self.repeat}]"

    def named(self, broken: Found) -> Found:
        """The (field, message) pairs found in this record, with the record's path before each field."""
        where = self.where
        return [(f"{where}.{name}", message) for name, message in broken]

    @property
    def window(self) -> bool:
        """Whether the record is a window: a cell measured once, or a repeat (a repeated cell shows their medians)."""
        return self.parent is not None or not self.cell.repeats


# Each record type's fields among COUNTS.
_COUNTED = {kind: tuple(name for name in COUNTS if name in kind.__struct_fields__) for kind in (DecodeCell, PrefillPoint)}
# Each record type's counts as a tuple, read in C (attrgetter gives a single name's value bare: a 1-tuple there).
_COUNTS_OF = {kind: operator.attrgetter(*names) if len(names) > 1 else lambda record, name=names[0]: (getattr(record, name),)
              for kind, names in _COUNTED.items()}


def oversized(record: DecodeCell | PrefillPoint) -> list[str]:
    """The counts of a record above MAX_TOKENS, the schema's bound on tokens: more than any server gives,
    and too large to be turned into a float, so no relation is judged with them."""
    if max(filter(None, _COUNTS_OF[type(record)](record)), default=0) <= MAX_TOKENS:  # in C: most records
        return []
    return [name for name in _COUNTED[type(record)] if (getattr(record, name) or 0) > MAX_TOKENS]


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


def records(bundle: Bundle) -> list[Record]:
    """Every decode record with figures of its own, in the bundle's order: each cell (a repeated one's
    are its repeats' medians), then its repeats."""
    found: list[Record] = []
    for index, cell in enumerate(bundle.decode):
        found.append(Record(index, cell, 0, None, oversized(cell)))
        if cell.repeats:
            found += [Record(index, measured, repeat, cell, oversized(measured)) for repeat, measured in enumerate(cell.repeats)]
    return found


def windows(bundle: Bundle) -> list[Record]:
    """Every window the bundle records: each cell measured once, and each repeat of a cell measured several times."""
    return [record for record in records(bundle) if record.window]
