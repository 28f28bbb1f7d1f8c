"""The GPUs' energy over a decode window, for joules per token: the meter (`EnergyMeter`, whose
`stop` gives a window's `WindowEnergy`) and its two sources, NVML on this machine (`nvml_meter`)
and DCGM exporters (`dcgm_meter`)."""

from runner.energy.dcgm import dcgm_meter
from runner.energy.meter import EnergyMeter, EnergyUnavailable, WindowEnergy
from runner.energy.nvml import nvml_meter

__all__ = ["EnergyMeter", "EnergyUnavailable", "WindowEnergy", "dcgm_meter", "nvml_meter"]
