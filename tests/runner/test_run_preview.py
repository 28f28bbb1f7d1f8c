"""`runner probe` reports what a measurement would record and plan, measuring nothing."""

from __future__ import annotations

from click.testing import CliRunner

from runner.cli import main
from runner.simulator import SimConfig, running_simulator


def test_probe_reports_server_facts_and_the_planned_matrix() -> None:
    config = SimConfig(max_model_len=32768, kv_capacity_tokens=131072)
    with running_simulator(config) as server:
        result = CliRunner().invoke(main, ["probe", "--base-url", server.base_url, "--duration", "5", "--max-output", "512"])
        served = server.stats()
    assert result.exit_code == 0, result.output
    lines = dict(line.split(":", 1) for line in result.output.splitlines() if ":" in line and not line.startswith(" "))
    assert lines["max length"].strip() == "32768 tokens"
    assert lines["KV capacity"].strip().startswith("131,072 tokens")
    assert lines["model"].strip().startswith("sim-model")
    contexts = [8192, 16384, 32768 - 512 - 1024 - (32768 - 512 - 1024) % 1024]
    levels = [1, 2, 4, 8, 16, 32, 64, 128]
    over = sum(n * (c + 512) > 131072 for c in contexts for n in levels)
    assert lines["cells"].strip().startswith(f"{len(contexts) * len(levels)} ({over} over capacity), 5 s each")
    assert served.generation_tokens_total == 0
