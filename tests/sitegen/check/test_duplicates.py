"""Duplicates: one run under another id, found by its measurements; one id in two files."""

from __future__ import annotations

import shutil
from pathlib import Path

from sitegen.check.duplicates import MAX_HOLDERS, Claim, duplicate_problems, packed
from tests.builders import edit_json, sitegen_check


def test_a_copy_under_another_id_is_named_in_both_files(seed_run: Path) -> None:
    copy = seed_run.with_name("copy.json")
    shutil.copy(seed_run, copy)

    def disguise(document: dict) -> None:  # another id, date and submitter, and one figure nudged
        document.update(id="someone-elses-run", measured_at="2026-10-01T08:00:00Z", submitter="@other")
        document["decode"][0]["ttft_ms"] += 1

    edit_json(copy, disguise)
    checked = sitegen_check(seed_run.parent)
    assert checked.exit_code == 1
    assert [line.split(": ", 2)[1] for line in checked.errors] == [f"{copy}:$.id", f"{seed_run}:$.id"]
    assert f"also in {seed_run} (id 'inkling-nvfp4-h200-sxm-x8-2026-09-17'): one run submitted twice" in checked.errors[0]


def test_a_copy_holding_a_count_beyond_64_bits_is_found_too(seed_run: Path) -> None:
    """Such a count is digested as JSON where the rest are msgpack: the copy's measurements still match."""
    edit_json(seed_run, lambda document: document["decode"][0].update(output_tokens=10**30))
    copy = seed_run.with_name("copy.json")
    shutil.copy(seed_run, copy)
    edit_json(copy, lambda document: document.update(id="someone-elses-run"))
    copied = [line for line in sitegen_check(seed_run.parent).errors if "one run submitted twice" in line]
    assert [line.split(": ", 2)[1] for line in copied] == [f"{copy}:$.id", f"{seed_run}:$.id"]


def test_one_id_in_two_files(bare_run: Path) -> None:
    other = bare_run.with_name("other.json")
    shutil.copy(bare_run, other)
    edit_json(other, lambda d: d.update(decode=[], prefill=[]))
    checked = sitegen_check(bare_run, other)
    run_id = bare_run.read_text().split('"id": "')[1].split('"')[0]
    assert checked.errors == [f"error: {other}:$.id: id {run_id!r} is already used by {bare_run}"]


def test_runs_that_share_a_few_rounded_figures_are_no_duplicates(seed_run: Path) -> None:
    other = seed_run.with_name("rerun.json")
    shutil.copy(seed_run, other)

    def rerun(document: dict) -> None:  # the same prefill as printed, every decode cell measured anew
        document["id"] = "inkling-rerun"
        for cell in document["decode"]:
            if cell["total_tok_s"] is not None:
                cell["ttft_ms"] += 1

    edit_json(other, rerun)
    assert sitegen_check(seed_run, other).errors == []


def test_a_measurement_many_runs_share_is_no_evidence_of_a_copy() -> None:
    common, own = 1, iter(range(2, 10**6))
    crowd = [Claim(f"runs/r{i}.json", f"r{i}", packed([common, next(own)])) for i in range(MAX_HOLDERS + 1)]
    assert duplicate_problems(crowd) == {}, "one of two measurements in common, held by more files than any copy would be"
    few = crowd[:3]
    assert sorted(duplicate_problems(few)) == [0, 1, 2], "the same share among a few files is a copy's"
