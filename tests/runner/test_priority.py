"""The runner measures at a raised priority where the system allows it, records it, and gives it back."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from runner import priority
from runner.priority import RAISED_NICE, current_nice, raised_priority, session_nice
from runner.simulator import SimConfig
from tests.builders import ROOT, measure_simulator


def _permitted() -> int:
    """The nice value this process may raise itself to (RAISED_NICE with CAP_SYS_NICE, as root in CI)."""
    with raised_priority() as nice:
        return nice


def test_the_block_runs_raised_where_permitted_and_the_old_priority_comes_back() -> None:
    before, session_before = current_nice(), session_nice()
    with raised_priority() as nice:
        assert current_nice() == nice
        assert nice in (RAISED_NICE, before)
        session = session_nice()
    assert current_nice() == before
    assert session_nice() == session_before
    if os.geteuid() == 0:  # CI measures as root, as a GPU box's operator often does
        assert nice == RAISED_NICE
        # The session's autogroup too, where the kernel has one: a server in another session
        # (another terminal, a service) is weighed against the session, not the thread.
        assert session == (None if session_before is None else min(session_before, RAISED_NICE))


class _BusyAutogroup:
    """An autogroup file whose first write the kernel refuses with EAGAIN, as it rate-limits them."""

    def __init__(self, nice: int) -> None:
        self.nice, self.refused = nice, 0

    def read_text(self) -> str:
        return f"/autogroup-1 nice {self.nice}\n"

    def write_text(self, text: str) -> None:
        if not self.refused:
            self.refused += 1
            raise BlockingIOError(11, "Resource temporarily unavailable")
        self.nice = int(text)


def test_a_rate_limited_session_write_is_tried_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    group = _BusyAutogroup(0)
    monkeypatch.setattr(priority, "AUTOGROUP", group)
    with raised_priority():
        assert session_nice() == RAISED_NICE and group.refused == 1
    assert session_nice() == 0


def test_without_an_autogroup_the_run_goes_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(priority, "AUTOGROUP", tmp_path / "no-such-kernel-file")
    before = current_nice()
    with raised_priority() as nice:
        assert session_nice() is None and current_nice() == nice
    assert current_nice() == before


def test_where_raising_is_refused_the_run_goes_on_at_its_own_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    before = current_nice()

    def refuse(which: int, who: int, value: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(priority.os, "setpriority", refuse)
    monkeypatch.setattr(priority, "_set_session_nice", lambda nice: None)  # refused the same way
    session = session_nice()
    with raised_priority() as nice:
        assert nice == before == current_nice()
        assert session_nice() == session


def test_a_run_records_the_priority_it_measured_at_and_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    before, expected = current_nice(), _permitted()
    bundle = measure_simulator(SimConfig(max_model_len=4096, base_step_ms=4), tmp_path / "run.json",
                               contexts=[1024], prefill_contexts=[1024], concurrency=[1], duration=0.5)
    assert bundle.hardware.client.nice == expected
    session = session_nice()
    if session is None:
        assert bundle.hardware.client.session_nice is msgspec.UNSET
    else:  # raised with the thread where permitted, and given back after
        assert bundle.hardware.client.session_nice == (expected if expected != before else session)
        assert session_nice() == session
    assert current_nice() == before


@pytest.mark.skipif(os.geteuid() != 0 or session_nice() is None, reason="raising the session needs CAP_SYS_NICE")
def test_a_runner_killed_outright_still_gives_its_session_back() -> None:
    before = session_nice()
    code = "from runner.priority import raised_priority\nwith raised_priority():\n    print('raised', flush=True)\n    input()"
    runner = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)  # the same session as this test, so the same autogroup
    try:
        assert runner.stdout.readline().strip() == "raised"
        assert session_nice() == min(before, RAISED_NICE)
    finally:
        runner.kill()
        runner.wait()
    deadline = time.monotonic() + 10
    while session_nice() != before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert session_nice() == before
