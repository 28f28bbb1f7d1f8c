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
