"""Statuses that disagree with their fields are named at the field."""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import check_errors_at, edit_json


def _over_capacity(seed_run: Path) -> int:
    """The index of the seed's first Over capacity cell."""
    return next(i for i, c in enumerate(json.loads(seed_run.read_text())["decode"]) if c["status"] == "Over capacity")


def test_an_over_capacity_cell_with_a_figure(seed_run: Path) -> None:
    index = _over_capacity(seed_run)
    edit_json(seed_run, lambda d: d["decode"][index].update(total_tok_s=12.5))
    [line] = check_errors_at(seed_run, f"$.decode[{index}].total_tok_s")
    assert line.endswith("an Over capacity cell was not run, so it holds no measurement")


def test_a_failed_cell_with_a_latency_and_tokens(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][0].update(status="Failed", error="HTTP 500"))
    assert check_errors_at(seed_run, "$.decode[0].ttft_ms") and check_errors_at(seed_run, "$.decode[0].output_tokens")


def test_a_valid_cell_without_output(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][0].update(total_tok_s=0.0, output_tokens=0))
    assert any("a Valid cell with no output" in line for line in check_errors_at(seed_run, "$.decode[0].total_tok_s"))


def test_a_valid_cell_without_its_figure_is_named_once(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][0].update(total_tok_s=None))
    assert check_errors_at(seed_run, "$.decode[0].total_tok_s") == [
        f"error: {seed_run}:$.decode[0].total_tok_s: a Valid cell needs its total tok/s"]


def test_prefill_points_whose_status_disagrees(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["prefill"][0].update(status="Failed", error="timeout"))
    assert check_errors_at(seed_run, "$.prefill[0].prompt_tok_s")
    edit_json(seed_run, lambda d: d["prefill"][1].update(status="Valid", ttft_ms=None))
    assert check_errors_at(seed_run, "$.prefill[1].ttft_ms")


def test_a_count_beyond_any_server_is_named_and_judged_no_further(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][0].update(output_tokens=10**400))
    assert check_errors_at(seed_run, "$.decode[0].output_tokens") == [
        f"error: {seed_run}:$.decode[0].output_tokens: more than the 1,099,511,627,776 any bundle may count"]
