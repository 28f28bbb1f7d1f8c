"""Is a difference between two runs real or noise? Decided from the repeats `runner measure --repeats` keeps.

A cell's noise is the range of total tok/s its repeats spanned; two runs' cells differ by no
more than the noise when their ranges overlap. Comparison pages mark those cells and say how many.
"""

from __future__ import annotations

from runner.bundle.schema import Bundle, DecodeCell
from sitegen.figures.compare import Valued
from sitegen.figures.summary import valued_by_cell
from sitegen.views.tail_view import repeats_of, total_range


def noise_range(cell: DecodeCell) -> tuple[float, float]:
    """The total tok/s a cell's repeats spanned; a cell measured once spans its one value."""
    return total_range(cell) or (cell.total_tok_s, cell.total_tok_s)


def within_noise(a: Bundle, b: Bundle, valued: Valued | None = None) -> dict[tuple[int, int], bool]:
    """For each cell with a value in both runs and repeats in at least one: do the two ranges of
    total tok/s overlap? Where they do, the difference between the runs lies within the noise.
    `valued`: the runs' valued_by_cell, where the caller has them (they are made otherwise)."""
    cells_a, cells_b = valued or (valued_by_cell(a), valued_by_cell(b))
    verdicts = {}
    for key, cell_b in cells_b.items():
        cell_a = cells_a.get(key)
        if cell_a is None or not (repeats_of(cell_a) or repeats_of(cell_b)):
            continue
        (lo_a, hi_a), (lo_b, hi_b) = noise_range(cell_a), noise_range(cell_b)
        verdicts[key] = max(lo_a, lo_b) <= min(hi_a, hi_b)
    return verdicts


NO_REPEATS = ("Neither run was measured with repeats (runner measure --repeats), so these ratios carry no "
              "measure of noise: a difference of a few percent can be chance.")


def noise_sentence(verdicts: dict[tuple[int, int], bool]) -> str:
    """What the comparison page says about noise, from `within_noise`'s verdicts."""
    if not verdicts:
        return NO_REPEATS
    inside = sum(verdicts.values())
    return (f"Cells with repeats in either run: {len(verdicts)}. Within the noise, where the ranges of the "
            f"repeats' total tok/s overlap (marked ≈), so the difference may be chance: {inside}. "
            f"Beyond the noise: {len(verdicts) - inside}.")
