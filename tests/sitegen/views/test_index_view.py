"""The listings' sort orders: each run's sort keys, read from the same cells as its record, and the
orders the build computes from them."""

from __future__ import annotations

import json

import msgspec
import pytest

from sitegen.figures.summary import summarize
from sitegen.views.index_view import (
    COLUMNS,
    RunRecord,
    orderings,
    positions_script,
    run_record,
    shown_columns,
    sort_keys,
    sort_orders,
    sort_script,
)
from tests.builders import make_bundle, make_served_bundle, script_call


def test_an_order_puts_runs_without_the_figure_last_either_way_and_keeps_ties_in_listing_order() -> None:
    assert orderings([5.0, None, 9.5, 5, 1]) == ([4, 0, 3, 2, 1], [2, 0, 3, 4, 1])
    assert orderings(["b", "b", "a", "c", "a"]) == ([2, 4, 0, 1, 3], [3, 0, 1, 2, 4])
    assert orderings([None, None]) == ([0, 1], [0, 1]) and orderings([]) == ([], [])


def test_sort_keys_are_the_records_sort_values_text_case_folded_and_none_without_the_figure() -> None:
    record = run_record(summarize(make_bundle(model="Ling-3.0-Flash", gpu=None, gpu_count=None, measured_at=None)))
    keys = dict(zip([key for key, _, _ in COLUMNS], sort_keys(record)))
    assert keys["model"] == "ling-3.0-flash" and keys["engine"] == "vllm 0.27.2"
    assert keys["gpu"] is None and keys["date"] is None and keys["per_gpu"] is None, "a run without the figure"
    assert keys["peak"] == record.cells["peak"][1] and isinstance(keys["max_context"], int)


def _scripts(records: list[bytes], keys: list) -> dict[str, tuple[str, str]]:
    """Every order's two scripts (its first screen, its positions) by the first one's site path."""
    numerals = [str(i) for i in range(len(records))]
    return {order.path: (sort_script(order, records), positions_script(order, numerals)) for order in sort_orders(keys)}


def _script_parts(scripts: tuple[str, str]) -> tuple[str, list[int], list[dict]]:
    """An order's name, its positions and its first screen of records, from its two scripts."""
    name, first, positions_path = script_call(scripts[0], "speedMatrixFirstScreen")
    again, positions = script_call(scripts[1], "speedMatrixPositions")
    assert again == name and positions_path == f"data/positions-{name}.js"
    return name, positions, first


def test_each_columns_orders_rank_the_records_by_their_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sitegen.views.index_view.FIRST_SCREEN", 2)
    models = ["beta", "Alpha", "gamma", "alpha"]
    records = [run_record(summarize(make_bundle(run_id=f"r{i}", model=m, scale=1 + i % 3, gpu=None if i == 1 else "H200")))
               for i, m in enumerate(models)]
    scripts = _scripts([msgspec.json.encode(r) for r in records], [sort_keys(r) for r in records])
    assert len(scripts) == 2 * len(COLUMNS)
    name, positions, first = _script_parts(scripts["data/sort-model-ascending.js"])
    assert name == "model-ascending" and positions == [1, 3, 0, 2], "case-folded, ties in listing order"
    assert [msgspec.json.decode(json.dumps(r), type=RunRecord) for r in first] == [records[1], records[3]]
    _, positions, _ = _script_parts(scripts["data/sort-peak-descending.js"])
    assert [records[i].cells["peak"][1] for i in positions] == sorted((r.cells["peak"][1] for r in records), reverse=True)
    _, positions, _ = _script_parts(scripts["data/sort-gpu-descending.js"])
    assert positions[-1] == 1, "the run without a GPU comes last either way"


def test_an_empty_listing_has_empty_orders() -> None:
    scripts = _scripts([], [])
    assert len(scripts) == 2 * len(COLUMNS) and all(_script_parts(s)[1:] == ([], []) for s in scripts.values())


def test_the_acceptance_column_shows_only_in_listings_with_a_run_that_has_the_figure() -> None:
    served, plain = summarize(make_served_bundle()), summarize(make_bundle())
    record = run_record(served)
    assert record.cells["acceptance"] == [f"{served.mean_acceptance_length:.2f}", served.mean_acceptance_length]
    assert run_record(plain).cells["acceptance"] == ["—"], "no figure: no sort value, so it sorts last"
    assert shown_columns([plain, served]) == COLUMNS
    assert shown_columns([plain]) == tuple(c for c in COLUMNS if c[0] != "acceptance")
    keys = dict(zip([key for key, _, _ in COLUMNS], sort_keys(record)))
    assert keys["acceptance"] == served.mean_acceptance_length
