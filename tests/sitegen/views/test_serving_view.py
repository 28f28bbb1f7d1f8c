"""What the run page says of how a run was served and of its readings: only the facts the bundle has, an
invalid energy reading as invalid with its reason, and a cell's endpoints only where one missed scrapes."""

from __future__ import annotations

import msgspec

from runner.bundle.schema import ServerLaunch, Topology
from sitegen.views.serving_view import SERVING_TEXT, launch_fields, serving_view, setup_fields
from tests.builders import INVALID_ENERGY_CELL, MISSED_SCRAPES_CELL, make_bundle, make_served_bundle


def _fields(fields: list) -> dict[str, str]:
    return {field.label: field.value for field in fields}


def test_the_served_facts_are_those_the_bundle_records() -> None:
    served = _fields(serving_view(make_served_bundle()).served)
    assert served == {
        "API": "Chat completions (/v1/chat/completions), through the server's chat template",
        "Nodes": "2", "Parallelism": "TP 4 × DP 2, EP 8", "Prefill GPUs": "4",
        "Decode GPUs": "8 (tok/s per GPU is per decode GPU)", "Speculative decoding": "eagle3, 3 draft tokens",
        "Server ready after": "84.3 s", "Server ended": "stopped by the runner (SIGTERM)",
        "Batch job": "slurm job 4242 on gpu-07", "Server log": "qwen3-32b-disaggregated.server.log",
    }
    bundle = make_bundle()
    assert serving_view(bundle) == serving_view(make_bundle()) and not serving_view(bundle).served
    bundle.topology, bundle.launch = Topology(pipeline_parallel=2), ServerLaunch(job_id="77")
    bundle.engine.speculative_tokens = 1
    assert _fields(setup_fields(bundle)) == {"Parallelism": "PP 2", "Speculative decoding": "1 draft token"}
    assert _fields(launch_fields(bundle)) == {"Batch job": "job 77"}


def test_speculative_rows_per_cell_with_rates_by_position() -> None:
    bundle = make_served_bundle()
    table = serving_view(bundle).speculative
    cells = [c for c in bundle.decode if c.speculative is not msgspec.UNSET]
    assert [(r.context, r.concurrency) for r in table.rows] == [("8K", "1"), ("8K", "4"), ("8K", "16"), ("8K", "64"), ("32K", "1"), ("32K", "16"), ("32K", "64")]
    first, check = table.rows[0], cells[0].speculative
    assert first.rate == f"{check.acceptance_rate * 100:.1f} %" and first.length == f"{check.mean_acceptance_length:.2f}"
    assert first.positions == " · ".join(f"{p * 100:.1f}" for p in check.per_position) and first.drafts == "900"
    assert table.sources == "server counters" and len(first.texts) == len(SERVING_TEXT.speculative_header)


def test_an_invalid_energy_reading_shows_its_reason_and_no_figure() -> None:
    bundle = make_served_bundle()
    rows = {(r.context, r.concurrency): r for r in serving_view(bundle).energy.rows}
    invalid = rows[("32K", str(INVALID_ENERGY_CELL[1]))]
    assert invalid.figures == [] and invalid.invalid == "Invalid: a gap of 4.2 s in the power samples"
    valid = rows[("8K", "64")]
    cell = next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == (8192, 64))
    watts = cell.energy.mean_watts_per_gpu
    assert valid.invalid is None and valid.figures[2] == f"{watts:.1f} W" and valid.figures[4] == "8"
    assert valid.figures[3] == f"{cell.total_tok_s / (watts * 8 / 1000):,.1f}", "tok/s per kW"


def test_endpoints_show_only_where_one_missed_scrapes() -> None:
    bundle = make_served_bundle()
    (cell,) = serving_view(bundle).endpoints
    assert cell.cell == f"8K × {MISSED_SCRAPES_CELL[1]}"
    assert cell.lines == ["http://10.0.0.2:8000/metrics: 40 scrapes, slowest 38 ms",
                          "http://10.0.0.3:8000/metrics: 3 of 40 scrapes failed, slowest 2,012 ms"]
    missed = next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == MISSED_SCRAPES_CELL)
    missed.server.endpoints[1].failed = 0
    assert serving_view(bundle).endpoints == []
