"""The figures of a run's speculative decoding and energy readings, computed once here for every page,
export and ranking: a cell's valid energy reading and its tok/s per kW, a run's acceptance length
and its best J per output token.

An energy reading the runner judged invalid never yields a figure: it is shown as invalid, with its reason.
"""

from __future__ import annotations

import statistics
from typing import TypeVar

from msgspec import UNSET, UnsetType

from runner.bundle.schema import DecodeCell, EnergyCheck

T = TypeVar("T")
WATTS_PER_KW = 1000


def given(value: T | UnsetType) -> T | None:
    """A bundle field added after the first release, None where a bundle leaves it out."""
    return None if value is UNSET else value


def valid_energy(cell: DecodeCell) -> EnergyCheck | None:
    """The cell's energy reading when the runner judged it valid, else None."""
    energy = given(cell.energy)
    return energy if energy is not None and energy.valid else None


def tok_s_per_kw(cell: DecodeCell) -> float | None:
    """Total tok/s ÷ (mean W per GPU × GPUs ÷ 1000), from a valid reading; None without one, a throughput or power."""
    energy = valid_energy(cell)
    if energy is None or cell.total_tok_s is None or not energy.mean_watts_per_gpu or not energy.gpus:
        return None
    return cell.total_tok_s / (energy.mean_watts_per_gpu * energy.gpus / WATTS_PER_KW)


def joules_per_output_token(cell: DecodeCell) -> float | None:
    """J per output token of a valid reading, else None."""
    energy = valid_energy(cell)
    return energy.joules_per_output_token if energy is not None else None


def acceptance_length(cell: DecodeCell) -> float | None:
    """The cell's mean acceptance length (tokens one target pass yields), or None."""
    speculative = given(cell.speculative)
    return speculative.mean_acceptance_length if speculative is not None else None


def median_acceptance_length(cells: list[DecodeCell]) -> float | None:
    """The median of the cells' mean acceptance lengths, over those that have one (a run's valued cells)."""
    lengths = [length for cell in cells if (length := acceptance_length(cell)) is not None]
    return statistics.median(lengths) if lengths else None


def best_joules_per_output_token(cells: list[DecodeCell]) -> float | None:
    """The lowest J per output token among the cells' valid readings (a run's valued cells), or None."""
    return min((j for cell in cells if (j := joules_per_output_token(cell)) is not None), default=None)
