"""The runner measures at a raised priority where the system allows it, records it, and gives it back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner import priority
from runner.priority import RAISED_NICE, current_nice, raised_priority
from runner.simulator import SimConfig
from tests.builders import measure_simulator


def _permitted() -> int:
    """The nice value this process may raise itself to (RAISED_NICE with CAP_SYS_NICE, as root in CI)."""
    with raised_priority() as nice:
        return nice


def test_the_block_runs_raised_where_permitted_and_the_old_priority_comes_back() -> None:
    before = current_nice()
    with raised_priority() as nice:
        assert current_nice() == nice
        assert nice in (RAISED_NICE, before)
    assert current_nice() == before
    if os.geteuid() == 0:  # CI measures as root, as a GPU box's operator often does
        assert nice == RAISED_NICE


def test_where_raising_is_refused_the_run_goes_on_at_its_own_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    before = current_nice()

    def refuse(which: int, who: int, value: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(priority.os, "setpriority", refuse)
    with raised_priority() as nice:
        assert nice == before == current_nice()


def test_a_run_records_the_priority_it_measured_at_and_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    before, expected = current_nice(), _permitted()
    bundle = measure_simulator(SimConfig(max_model_len=4096, base_step_ms=4), tmp_path / "run.json",
                               contexts=[1024], prefill_contexts=[1024], concurrency=[1], duration=0.5)
    assert bundle.hardware.client.nice == expected
    assert current_nice() == before
