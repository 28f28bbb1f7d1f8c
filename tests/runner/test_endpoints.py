"""A server behind several /metrics endpoints (`--metrics-url`, repeatable): two real servers behind a
round-robin front, each with its own /metrics. The cell's server figures are the sum of both."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path

import pytest

import runner.endpoints
from runner.bundle.schema import decode_bundle
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.simulator import SimConfig, running_simulator
from tests.builders import FIGURES
from tests.engines.round_robin import round_robin


def _logged(log: Path, start: float, end: float) -> int:
    """Tokens the simulator logged as emitted between two wall-clock moments."""
    total = 0
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if "n" in entry and start <= entry["t"] <= end:
            total += entry["n"]
    return total


def _options(front: str, urls: list[str], out: Path) -> Options:
    return Options(base_url=front, metrics_urls=urls, out=out, contexts=[1024], prefill_contexts=[1024],
                   concurrency=[2, 4], duration=1.5, max_output=64)


def test_two_servers_behind_one_front_are_summed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[tuple[float, float]] = []
    original = runner.endpoints.MetricsEndpoints.read

    async def timed(self):  # when each scrape of both endpoints was sent and answered (wall clock, as the logs)
        sent = time.time()
        found = await original(self)
        reads.append((sent, time.time()))
        return found

    monkeypatch.setattr(runner.endpoints.MetricsEndpoints, "read", timed)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    out = tmp_path / "run.json"
    with running_simulator(SimConfig(max_model_len=8192, token_log=str(logs[0]))) as first, \
            running_simulator(SimConfig(max_model_len=8192, token_log=str(logs[1]))) as second:
        backends = [("127.0.0.1", int(s.root_url.rsplit(":", 1)[1])) for s in (first, second)]
        with round_robin(backends) as front:
            urls = [first.root_url + "/metrics", second.root_url + "/metrics"]
            asyncio.run(measure(_options(front, urls, out), progress=Progress(0, io.StringIO())))
    bundle = decode_bundle(out.read_bytes())
    for cell in bundle.decode:
        server = cell.server
        assert [e.url for e in server.endpoints] == urls and all(e.failed == 0 and e.scrapes >= 2 for e in server.endpoints)
        start = cell.window_started_at.timestamp()
        before = max((r for r in reads if r[1] <= start + 0.001), key=lambda r: r[1])
        after = min((r for r in reads if r[0] >= start + cell.measured_s - 0.001), key=lambda r: r[0])
        inside = sum(_logged(log, before[1], after[0]) for log in logs)
        around = sum(_logged(log, before[0], after[1]) for log in logs)
        per_server = [_logged(log, before[0], after[1]) for log in logs]
        assert inside <= server.generated_tokens <= around, (cell.concurrency, inside, server.generated_tokens, around)
        FIGURES.append(f"two endpoints, {cell.concurrency} requests: the summed counter {server.generated_tokens} "
                       f"tokens; the two servers logged {inside} to {around} between the scrapes")
        assert all(tokens > 0 for tokens in per_server)  # both servers did part of the work
        # A client slowed by a busy machine (its TTFT far above the servers') is said, not published as Valid.
        assert cell.status == ("Distorted" if cell.distortion else "Valid"), (cell.status, cell.distortion)


def test_a_dead_metrics_endpoint_makes_the_cell_say_so(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with running_simulator(SimConfig(max_model_len=8192)) as server:
        dead = "http://127.0.0.1:9/metrics"
        options = _options(server.base_url, [server.root_url + "/metrics", dead], out)
        asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
    for cell in decode_bundle(out.read_bytes()).decode:
        assert cell.status == "Distorted"
        assert f"metrics at {dead} did not answer before the window" in (cell.distortion or "")
