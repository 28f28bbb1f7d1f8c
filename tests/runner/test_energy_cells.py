"""Energy per token in a run: `runner measure --gpu-metrics-url` against a DCGM exporter the test serves
with a known energy ramp, and a server the runner measures at the same time."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from runner.bundle.schema import EnergyCheck, decode_bundle
from runner.cli import main
from runner.simulator import SimConfig, running_simulator
from tests.engines.dcgm_exporter import running_exporter

PLAN = ["--contexts", "1K", "--prefill-contexts", "1K", "--concurrency", "1,2", "--duration", "2.5", "--max-output", "64"]


def test_each_cell_records_the_gpus_energy_over_its_window(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with running_exporter([300.0, 450.0]) as exporter, running_simulator(SimConfig(max_model_len=8192)) as server:
        result = CliRunner().invoke(main, ["measure", "--base-url", server.base_url, "--out", str(out),
                                           "--gpu-metrics-url", exporter.url, *PLAN])
    assert result.exit_code == 0, result.output
    for cell in decode_bundle(out.read_bytes()).decode:
        energy = cell.energy
        assert isinstance(energy, EnergyCheck) and energy.valid, energy
        assert energy.gpus == 2 and energy.source == exporter.url
        # 750 W in all for the meter's span, within what the counters' whole millijoules allow.
        assert abs(energy.mean_watts_per_gpu - 375.0) / 375.0 < 0.005
        assert energy.joules_per_output_token == energy.joules / cell.output_tokens
        assert energy.joules_per_token < energy.joules_per_output_token  # the prompts count too


def test_an_exporter_that_cannot_be_read_stops_the_run_before_it_measures(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with running_simulator(SimConfig(max_model_len=8192)) as server:
        result = CliRunner().invoke(main, ["measure", "--base-url", server.base_url, "--out", str(out),
                                           "--gpu-metrics-url", "http://127.0.0.1:9/metrics", *PLAN])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("error: cannot measure energy: ")
    assert not out.exists()


def test_nvml_and_an_exporter_together_is_one_usage_line(tmp_path: Path) -> None:
    with running_simulator(SimConfig(max_model_len=8192)) as server:
        result = CliRunner().invoke(main, ["measure", "--base-url", server.base_url, "--out", str(tmp_path / "r.json"),
                                           "--gpu-energy", "--gpu-metrics-url", "http://127.0.0.1:9/metrics", *PLAN])
    assert result.exit_code != 0 and "choose one" in result.output.splitlines()[-1]
