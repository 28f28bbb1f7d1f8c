"""Method compliance: windows as long as the run says, its max output, its prompt mode."""

from __future__ import annotations

from pathlib import Path

from tests.builders import check_errors_at, edit_json


def test_a_runner_window_shorter_than_the_run_says(bare_run: Path) -> None:
    edit_json(bare_run, lambda d: d["run"].update(seconds_per_measurement=d["decode"][0]["measured_s"] + 0.01))
    [line] = check_errors_at(bare_run, "$.decode[0].measured_s")
    assert "shorter than the" in line


def test_a_page_window_a_tenth_short(seed_run: Path) -> None:
    def change(document: dict) -> None:
        cell = document["decode"][0]  # 2,214 tokens at 73.8 tok/s: 26.7 s keeps output ≈ total × window
        cell.update(measured_s=26.7, output_tokens=round(cell["total_tok_s"] * 26.7))

    edit_json(seed_run, change)
    assert check_errors_at(seed_run, "$.decode[0].measured_s")


def test_more_tokens_than_the_max_output_allows(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["run"].update(max_output_tokens=2000))  # the first cell: 2,214 tokens from one request
    [line] = check_errors_at(seed_run, "$.decode[0].output_tokens")
    assert line.endswith("2,214 tokens from 0 finished and at most 1 running requests: more than 2,000 each allows")


def test_a_request_in_the_records_longer_than_the_max_output(run: Path) -> None:
    edit_json(run, lambda d: d["run"].update(max_output_tokens=20))
    [line] = [line for line in check_errors_at(run, "$.decode[0].output_tokens") if "a request in" in line]
    assert "streamed" in line and "more than the run's max output 20" in line


def test_the_prompt_mode_not_recorded(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["run"].update(prefill_mode=None))
    assert check_errors_at(seed_run, "$.run.prefill_mode")
