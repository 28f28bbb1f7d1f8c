"""A decode cell's figures from its requests' traces, by definition."""

from __future__ import annotations

import statistics

import pytest

from runner.cell import decode_figures
from tests.builders import make_trace


def test_decode_figures_by_definition() -> None:
    # Two requests over a 10 s window: one at 10 tok/s, one at 5 tok/s with 2 tokens a chunk.
    a = make_trace(0.0, [0.1 * (i + 1) for i in range(100)])
    b = make_trace(0.0, [0.4 * (i + 1) for i in range(25)], [2] * 25)
    late = make_trace(9.5, [10.5])  # its first token came after the window: not counted
    figures = decode_figures([a, b, late], 0.0, 10.0)
    assert figures.output_tokens == 150
    assert figures.total_tok_s == pytest.approx(15.0)
    assert figures.per_request_tok_s == pytest.approx(statistics.median([99 / 9.9, 49 / 9.6]))
    assert figures.ttft_ms == pytest.approx(250.0)
    assert figures.avg_active == pytest.approx((9.9 + 9.6) / 10)
    assert figures.completed == 0
    done = decode_figures([make_trace(0.0, [1.0, 2.0, 3.0], end=3.0)], 0.0, 10.0)
    assert done.completed == 1 and done.avg_active == pytest.approx(0.2)


def test_a_cell_stopped_mid_window_leaves_no_stream_or_scrape_running() -> None:
    """Ctrl-C cancels the measuring task; the cell's streams and its /metrics sampler must end with
    it, before the run closes its client: one left running reached the closed client and its error
    printed as a traceback under the stop message."""
    import asyncio

    from runner.cell import CellRunner
    from runner.client import Client
    from runner.endpoints import MetricsEndpoints
    from runner.prompts import PromptMaker
    from runner.simulator import SimConfig, start_simulator

    async def stop_a_cell() -> list[str]:
        server = await start_simulator(SimConfig(max_model_len=4096, base_step_ms=4))
        client = Client(server.base_url, None)
        try:
            maker = PromptMaker(client, "sim-model", "simulator", "t")
            await maker.setup()
            prompts = [await maker.make(1024, slot) for slot in range(2)]
            cells = CellRunner(client, maker, "sim-model", 256, True, MetricsEndpoints(client).read)
            task = asyncio.create_task(cells.decode(1024, prompts, 30.0))
            while cells.live_tokens == 0:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await client.aclose()
            await server.close()
        await asyncio.sleep(0.3)  # a sampler still running would wake and scrape by now
        return [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(stop_a_cell()) == []
