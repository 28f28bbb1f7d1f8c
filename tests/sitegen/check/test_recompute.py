"""Recomputation: the raw records give the bundle's figures exactly, and a figure they do not give is named."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from runner.bundle.records import append_window, read_windows, records_path, window_figures
from runner.bundle.schema import decode_bundle
from sitegen.check.checker import CheckContext, check_data
from sitegen.check.recompute import FIGURES, recompute
from tests.builders import check_errors_at, edit_json, sitegen_check


def test_the_records_give_every_figure_exactly_by_the_documented_function(run: Path) -> None:
    bundle = decode_bundle(run.read_bytes())
    again = {(w.context, w.concurrency): window_figures(w.window_us, requests) for w, requests in read_windows(records_path(run))}
    for cell in bundle.decode:
        recomputed = again[cell.context_tokens, cell.concurrency]
        assert {name: getattr(cell, name) for name in FIGURES} == {name: getattr(recomputed, name) for name in FIGURES}
    assert recompute(run, bundle) == ("recompute", [])
    checked = sitegen_check(run)
    assert (checked.exit_code, checked.errors) == (0, [])
    assert checked.verdicts[0] == f"{run}: consistent (unsigned; raw records recompute every cell)"


def test_a_figure_changed_in_its_last_digit(run: Path) -> None:
    edit_json(run, lambda d: d["decode"][1].update(ttft_ms=d["decode"][1]["ttft_ms"] * (1 + 1e-12)))
    [line] = check_errors_at(run, "$.decode[1].ttft_ms")
    assert "in the bundle, but its raw records give" in line


def test_a_repeat_and_a_repeated_cells_median(repeated_run: Path, tmp_path: Path) -> None:
    path = tmp_path / repeated_run.name
    shutil.copy(repeated_run, path)
    shutil.copy(records_path(repeated_run), records_path(path))
    edit_json(path, lambda d: d["decode"][0]["repeats"][0].update(avg_active=d["decode"][0]["repeats"][0]["avg_active"] * 0.99))
    assert check_errors_at(path, "$.decode[0].repeats[0].avg_active")
    shutil.copy(repeated_run, path)

    def change(document: dict) -> None:  # between the repeats' lowest and highest, but not their median
        figures = sorted(r["tbt_ms"] for r in document["decode"][0]["repeats"] if r["tbt_ms"] is not None)
        document["decode"][0]["tbt_ms"] = (figures[0] + figures[-1]) / 2 + (figures[-1] - figures[0]) / 10

    edit_json(path, change)
    [line] = check_errors_at(path, "$.decode[0].tbt_ms")
    assert "but its repeats make" in line


def test_damaged_records_are_one_line_naming_the_records_file(run: Path) -> None:
    records = records_path(run)
    records.write_bytes(records.read_bytes()[:-20])
    checked = sitegen_check(run)
    assert checked.exit_code == 1
    [line] = [line for line in checked.errors if line.startswith(f"error: {records}: ")]
    assert "cannot read the request records" in line
    records.write_bytes(gzip.compress(b'{"kind": "request", "start_us": 0}\n'))
    assert any(line.startswith(f"error: {records}: cannot read the request records") for line in sitegen_check(run).errors)


def test_a_cell_with_no_window_in_the_records(run: Path) -> None:
    records = records_path(run)
    first = next(read_windows(records))
    records.unlink()
    append_window(records, *first)
    [line] = check_errors_at(run, "$.decode[1]")
    assert line.endswith(f"no window of this cell in {records.name}")


def test_a_measured_cell_turned_over_capacity_and_one_dropped(run: Path) -> None:
    def hide(document: dict) -> None:
        cell = document["decode"][1]
        document["decode"][1] = {key: cell[key] for key in ("context_tokens", "concurrency")} | {"status": "Over capacity"}

    edit_json(run, hide)
    [line] = check_errors_at(run, "$.decode[1].status")
    assert line.endswith(f"Over capacity, so never run, but {records_path(run).name} holds a window of this cell")
    edit_json(run, lambda d: d.update(decode=d["decode"][:1]))
    [line] = [line for line in sitegen_check(run).errors if line.startswith(f"error: {records_path(run)}: ")]
    assert line.endswith("(repeat 0), a cell the bundle does not hold")


def test_a_bundle_alone_in_its_folder_is_judged_alike_without_looking_beside_it(bare_run: Path) -> None:
    """A build whose listing found no file beside a bundle skips the look: the verdict is the same."""
    assert sorted(p.name for p in bare_run.parent.iterdir()) == [bare_run.name]
    data = bare_run.read_bytes()
    looked = check_data(bare_run, data, CheckContext())
    assert (looked.records, looked.signature) == ("absent", "unsigned")
    assert check_data(bare_run, data, CheckContext(), beside=False) == looked
