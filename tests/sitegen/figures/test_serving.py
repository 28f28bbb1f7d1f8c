"""The figures of speculative decoding and energy readings: valid readings only, tok/s per kW, and a run's
acceptance length and best J per output token over its valued cells."""

from __future__ import annotations

import msgspec
import pytest

from runner.bundle.schema import EnergyCheck, SpeculativeCheck
from sitegen.figures.serving import (
    acceptance_length,
    best_joules_per_output_token,
    joules_per_output_token,
    median_acceptance_length,
    tok_s_per_kw,
    valid_energy,
)
from sitegen.figures.summary import valued_cells
from tests.builders import INVALID_ENERGY_CELL, decode_cell, make_served_bundle


def test_tok_s_per_kw_is_total_tok_s_over_the_gpus_power_in_kw() -> None:
    cell = decode_cell(8192, 16, 1.0)
    cell.energy = EnergyCheck(source="nvml", valid=True, gpus=8, mean_watts_per_gpu=400.0, joules_per_output_token=1.5)
    assert tok_s_per_kw(cell) == pytest.approx(cell.total_tok_s / 3.2)
    assert joules_per_output_token(cell) == 1.5 and valid_energy(cell) is cell.energy


@pytest.mark.parametrize("energy", [
    EnergyCheck(source="nvml", valid=False, invalid_reason="a counter went backwards", gpus=8, mean_watts_per_gpu=400.0,
                joules_per_output_token=1.5),
    EnergyCheck(source="nvml", valid=True, gpus=0, mean_watts_per_gpu=400.0),
    EnergyCheck(source="nvml", valid=True, gpus=8),
    msgspec.UNSET,
], ids=["invalid", "no GPUs", "no power", "no reading"])
def test_a_reading_that_cannot_give_a_figure_gives_none(energy: EnergyCheck) -> None:
    cell = decode_cell(8192, 16, 1.0)
    cell.energy = energy
    assert tok_s_per_kw(cell) is None
    if energy is msgspec.UNSET or not energy.valid:
        assert valid_energy(cell) is None and joules_per_output_token(cell) is None


def test_a_runs_figures_come_from_its_valued_cells_and_valid_readings_only() -> None:
    bundle = make_served_bundle()
    valued = valued_cells(bundle)
    lengths = sorted(c.speculative.mean_acceptance_length for c in valued)
    middle = len(lengths) // 2
    assert median_acceptance_length(valued) == pytest.approx(lengths[middle] if len(lengths) % 2 else (lengths[middle - 1] + lengths[middle]) / 2)
    assert all(c.status in ("Valid", "Requests queued") for c in valued) and len(valued) < len(bundle.decode)
    readings = [c.energy.joules_per_output_token for c in valued if c.energy.valid]
    assert best_joules_per_output_token(valued) == min(readings)
    invalid = next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == INVALID_ENERGY_CELL)
    invalid.energy = msgspec.structs.replace(invalid.energy, joules_per_output_token=0.001)  # figures the runner did not trust
    assert best_joules_per_output_token(valued_cells(bundle)) == min(readings)


def test_a_run_without_readings_has_no_figures() -> None:
    bundle = make_served_bundle(speculative=False, energy=False)
    assert median_acceptance_length(bundle.decode) is None and best_joules_per_output_token(bundle.decode) is None
    cell = decode_cell(8192, 1, 1.0)
    cell.speculative = SpeculativeCheck(source="server gauges (running means)", acceptance_rate=0.6)
    assert acceptance_length(cell) is None
