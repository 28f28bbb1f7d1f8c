"""Measuring item by item: the settle before a prefill, against a server without a running gauge."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import pytest

import runner.measurement
from runner.bundle.schema import decode_bundle
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from tests.engines.hostile_engine import hostile


class _PhaseTimes(Progress):
    """Plain progress that also keeps when each phase word came."""

    def __init__(self) -> None:
        super().__init__(0, io.StringIO())
        self.times: list[tuple[str, float]] = []

    def phase(self, word: str) -> None:
        self.times.append((word, time.monotonic()))
        super().phase(word)


def test_without_a_running_gauge_a_prefill_waits_only_for_streams_the_client_cut_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first prefill follows requests that all finished: no wait. One after a decode window waits
    SETTLE_BLIND_S from the window's end, when the client cut its streams off."""
    blind_s = 2.0
    monkeypatch.setattr(runner.measurement, "SETTLE_BLIND_S", blind_s)
    progress = _PhaseTimes()
    with hostile() as engine:  # its /metrics is a 404: no gauge says what runs
        options = Options(base_url=engine.base_url, out=tmp_path / "run.json", contexts=[1024],
                          prefill_contexts=[1024, 2048], concurrency=[1], duration=0.3, max_output=8)
        asyncio.run(measure(options, progress=progress))
    assert [p.status for p in decode_bundle((tmp_path / "run.json").read_bytes()).prefill] == ["Valid", "Valid"]
    words = [word for word, _ in progress.times]
    settles = [i for i, word in enumerate(words) if word == "settling"]
    assert len(settles) == 2 and words[settles[0] + 1] == words[settles[1] + 1] == "prefilling"
    first_wait = progress.times[settles[0] + 1][1] - progress.times[settles[0]][1]
    assert first_wait < blind_s / 2
    window_began = progress.times[words.index("measuring")][1]
    assert progress.times[settles[1] + 1][1] >= window_began + options.duration + blind_s
