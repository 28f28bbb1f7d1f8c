"""Where each measured record of a bundle lives: the `$.decode[3].repeats[1]` paths that error lines name."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from runner.bundle.schema import MAX_TOKENS, Bundle, DecodeCell, PrefillPoint

# The whole numbers of a record that the schema leaves unbounded.
COUNTS = ("concurrency", "completed", "output_tokens", "prompt_tokens")


class Window(msgspec.Struct, frozen=True):
    """One decode window as the bundle holds it: a cell, or one repeat of a cell measured several times."""

    where: str
    cell: DecodeCell
    repeat: int
    # The cell that holds this repeat; None for a cell measured once.
    parent: DecodeCell | None = None


def oversized(record: DecodeCell | PrefillPoint) -> list[str]:
    """The counts of a record above MAX_TOKENS, the schema's bound on tokens: more than any server gives,
    and too large to be turned into a float, so no relation is judged with them."""
    return [name for name in COUNTS if (getattr(record, name, None) or 0) > MAX_TOKENS]


def cell_path(index: int) -> str:
    """`$.decode[3]`."""
    return f"$.decode[{index}]"


def prefill_path(index: int) -> str:
    """`$.prefill[2]`."""
    return f"$.prefill[{index}]"


def windows(bundle: Bundle) -> Iterator[Window]:
    """Every window the bundle records: each cell measured once, and each repeat of a cell measured several times."""
    for index, cell in enumerate(bundle.decode):
        if isinstance(cell.repeats, list) and cell.repeats:
            for repeat, measured in enumerate(cell.repeats):
                yield Window(f"{cell_path(index)}.repeats[{repeat}]", measured, repeat, cell)
        else:
            yield Window(cell_path(index), cell, 0)


def figures(bundle: Bundle) -> Iterator[tuple[str, DecodeCell]]:
    """Every record with figures of its own: each cell (a repeated one's are its repeats' medians) and each repeat."""
    for index, cell in enumerate(bundle.decode):
        yield cell_path(index), cell
        for repeat, measured in enumerate(cell.repeats or ()):
            yield f"{cell_path(index)}.repeats[{repeat}]", measured
