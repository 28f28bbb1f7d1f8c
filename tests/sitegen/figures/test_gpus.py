"""Per-GPU figures of a disaggregated run divide output tok/s by its decode GPUs, wherever they are made;
its cost is that of every GPU it holds."""

from __future__ import annotations

import pytest

from runner.bundle.schema import Topology
from sitegen.figures.capacity import capacity, check_target
from sitegen.figures.gpus import output_gpu_count, output_gpus, paid_gpus
from sitegen.figures.summary import summarize
from sitegen.views import charts
from sitegen.views.capacity_view import capacity_view
from tests.builders import make_bundle, make_served_bundle


def test_decode_gpus_decide_the_divisor_and_both_sides_the_price() -> None:
    served = make_served_bundle()  # 12 GPUs: 4 prefill, 8 decode
    assert (output_gpus(served), paid_gpus(served)) == (8, 12)
    plain = make_bundle(gpu_count=2)
    assert (output_gpus(plain), paid_gpus(plain)) == (2, 2)
    plain.topology = Topology(tensor_parallel=2)
    assert (output_gpus(plain), paid_gpus(plain)) == (2, 2), "a topology without sides changes nothing"
    plain.topology = Topology(decode_gpus=6)
    assert (output_gpus(plain), paid_gpus(plain)) == (6, 2), "without the prefill side's count, the run's own is paid for"
    assert output_gpu_count(None, None) is None and output_gpu_count(None, 4) == 4


def test_summary_chart_and_capacity_divide_by_the_decode_gpus() -> None:
    bundle = make_served_bundle(gpu_count=12)
    summary = summarize(bundle)
    assert summary.peak_tok_s_per_gpu == pytest.approx(summary.peak_tok_s / 8)
    assert (summary.prefill_gpus, summary.decode_gpus, summary.gpu_count) == (4, 8, 12)
    for point in charts.cell_points(bundle):
        assert point.y == round(point.cell.total_tok_s / 8, 1)
    picks = [p for p in capacity(bundle, check_target(1000, 20, 2.5)) if p.concurrency is not None]
    assert picks
    for pick in picks:
        assert pick.tok_s_per_gpu == pytest.approx(pick.total_tok_s / 8)
        assert pick.usd_per_million_tokens == pytest.approx(2.5 * 12 / (pick.total_tok_s * 3600) * 1e6)
    assert '"gpus":8' in capacity_view(bundle).data and '"paid_gpus":12' in capacity_view(bundle).data
    assert "paid_gpus" not in capacity_view(make_bundle()).data, "a run page without sides embeds what it did before"
