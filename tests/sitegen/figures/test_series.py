"""Series of runs of one setup, and the regression rule: an injected 10 % regression is flagged, changes
within a series' noise are not."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from runner.bundle.schema import Bundle
from sitegen.figures.series import (
    MIN_BASELINE_RUNS,
    PEAK,
    SINGLE_STREAM,
    Figure,
    build_series,
    cell_figure,
    judge,
    normalised_flags,
    prefill_figure,
    series_key,
    series_point,
)
from tests.builders import LAUNCH, make_bundle

DAY = dt.timedelta(days=1)
START = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


def dated_runs(scales: list[float], **changes: object) -> list[Bundle]:
    """One run a day of the builders' setup, each scaled as given (engine versions step every third run)."""
    return [make_bundle(run_id=f"run-{i:02d}", scale=s, measured_at=START + i * DAY, version=f"0.{27 + i // 3}.0", **changes)
            for i, s in enumerate(scales)]


def points(bundles: list[Bundle]) -> list:
    return [series_point(b, b.id) for b in bundles]


def test_ports_hosts_paths_and_secrets_do_not_split_a_series() -> None:
    a = "vllm serve /models/a --port 8000 --host 0.0.0.0 --api-key sk-1 --tensor-parallel-size 2 --download-dir /x"
    b = "python -m vllm serve ~/m --port=9001 --host 10.0.0.2 --api-key other --download-dir ./y --tensor-parallel-size 2"
    assert normalised_flags(a) == normalised_flags(b) == (("--download-dir", "<path>"), ("--tensor-parallel-size", "2"))


def test_a_changed_flag_quantization_gpu_count_or_model_starts_another_series() -> None:
    base = series_key(make_bundle())
    assert series_key(make_bundle(run_id="other", measured_at=START, version="0.30.0")) == base
    assert series_key(make_bundle(launch_command=LAUNCH.replace("--max-model-len 262144", "--max-model-len 131072"))) != base
    assert series_key(make_bundle(gpu_count=4)) != base
    assert series_key(make_bundle(model="Other-7B")) != base


def test_a_point_has_the_headline_figures_every_valued_cell_and_prefill() -> None:
    bundle = make_bundle()
    point = series_point(bundle, "title")
    assert point is not None
    valued = [c for c in bundle.decode if c.total_tok_s is not None]
    assert point.figures[SINGLE_STREAM].value == min(valued, key=lambda c: (c.concurrency, c.context_tokens)).total_tok_s
    assert point.figures[PEAK].value == max(c.total_tok_s for c in valued)
    for cell in valued:
        assert point.figures[cell_figure(cell.context_tokens, cell.concurrency)].value == cell.total_tok_s
    assert point.figures[prefill_figure(8192)].value == bundle.prefill[0].prompt_tok_s
    assert series_point(make_bundle(measured_at=None), "undated") is None


def test_series_need_two_runs_and_list_them_by_date() -> None:
    runs = dated_runs([1.0, 1.01, 0.99])
    lone = make_bundle(run_id="lone", model="Lone-1B")
    found = build_series(points([runs[2], lone, runs[0], runs[1]]))
    assert len(found) == 1
    assert [p.run_id for p in found[0].points] == ["run-00", "run-01", "run-02"]
    assert [p.version for p in found[0].points] == ["0.27.0", "0.27.0", "0.27.0"]


def test_an_injected_ten_percent_regression_is_flagged_on_every_figure_it_touches() -> None:
    rng = random.Random(7)
    scales = [1 + rng.uniform(-0.015, 0.015) for _ in range(8)] + [0.9]
    (series,) = build_series(points(dated_runs(scales)))
    kinds = {n.figure: n.kind for n in series.notices}
    assert kinds[SINGLE_STREAM] == kinds[PEAK] == "regression"
    assert set(kinds.values()) == {"regression"}
    assert all(n.run_id == "run-08" and -12 < n.change_pct < -8 for n in series.notices)


def test_changes_within_the_noise_are_not_flagged() -> None:
    rng = random.Random(11)
    for _ in range(20):
        scales = [1 + rng.uniform(-0.03, 0.03) for _ in range(9)]
        (series,) = build_series(points(dated_runs(scales)))
        assert series.notices == []


def test_an_improvement_is_marked() -> None:
    (series,) = build_series(points(dated_runs([1.0, 1.01, 0.99, 1.0, 1.12])))
    assert {n.kind for n in series.notices} == {"improvement"}


def test_a_noisy_baseline_widens_the_threshold() -> None:
    quiet = judge([100.0, 101.0, 99.0, 100.0], Figure(90.0))
    noisy = judge([100.0, 110.0, 90.0, 104.0, 96.0], Figure(90.0))
    assert quiet is not None and quiet[0] == "regression"
    assert noisy is None


def test_a_cells_repeat_spread_widens_the_threshold() -> None:
    baseline = [100.0, 100.5, 99.5, 100.0]
    assert judge(baseline, Figure(92.0))[0] == "regression"
    assert judge(baseline, Figure(92.0, spread_pct=12.0)) is None


@pytest.mark.parametrize("count", range(MIN_BASELINE_RUNS))
def test_too_few_runs_give_no_notice(count: int) -> None:
    assert judge([100.0] * count, Figure(50.0)) is None
