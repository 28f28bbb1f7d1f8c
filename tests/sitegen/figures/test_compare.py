"""Comparisons: which pairs get a page, the ratio matrix and what differs between two runs."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest

from runner.bundle.schema import Bundle
from sitegen.figures.compare import (
    OTHER_ENGINE,
    OTHER_HARDWARE,
    OTHER_MODEL,
    SAME_SETUP,
    compare_slug,
    field_diffs,
    launch_options,
    ratio_matrix,
    related_pairs,
)
from tests.builders import make_bundle, make_served_bundle


def day(n: int) -> dt.datetime:
    """A September 2026 date."""
    return dt.datetime(2026, 9, n, tzinfo=dt.timezone.utc)


def ids(pairs: list[tuple[Bundle, Bundle, str]]) -> list[tuple[str, str, str]]:
    """Pairs as (baseline id, other id, reason)."""
    return [(a.id, b.id, why) for a, b, why in pairs]


def test_reasons_and_baseline_order() -> None:
    runs = [
        make_bundle("ling-new", version="0.28", measured_at=day(9)),
        make_bundle("ling-old", version="0.27", measured_at=day(2)),
        make_bundle("ling-b200", gpu="B200", measured_at=day(5)),
        make_bundle("mimo", model="MiMo-V2", measured_at=day(7)),
        make_bundle("other", model="Other", gpu="MI300X"),
    ]
    found = ids(related_pairs(runs))
    assert ("ling-old", "ling-new", OTHER_ENGINE) in found
    assert ("ling-b200", "ling-new", OTHER_HARDWARE) in found
    assert ("ling-old", "mimo", OTHER_MODEL) in found
    assert not any("other" in (a, b) for a, b, _ in found)
    assert found == sorted(found, key=lambda p: f"{p[0]}-vs-{p[1]}")


def test_a_rerun_of_the_same_setup_is_related() -> None:
    found = ids(related_pairs([make_bundle("x", measured_at=day(3)), make_bundle("y", measured_at=day(1))]))
    assert found == [("y", "x", SAME_SETUP)]


def test_unknown_gpus_are_not_the_same_hardware() -> None:
    assert related_pairs([make_bundle("a", gpu=None), make_bundle("b", gpu=None, model="Other")]) == []


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_each_run_has_at_most_limit_partners_and_no_pair_twice(limit: int) -> None:
    runs = [make_bundle(f"run-{i}", version=str(i), gpu=("H200", "B200")[i % 2]) for i in range(9)]
    pairs = related_pairs(runs, limit=limit)
    partners = Counter(run.id for a, b, _ in pairs for run in (a, b))
    assert max(partners.values()) <= limit
    assert len({frozenset((a.id, b.id)) for a, b, _ in pairs}) == len(pairs)
    assert len(pairs) >= len(runs) * limit // 2 - 1
    assert ids(pairs) == ids(related_pairs(runs[::-1], limit=limit))


def test_compare_slug() -> None:
    assert compare_slug(make_bundle("a-run"), make_bundle("b-run")) == "a-run-vs-b-run"


def test_ratio_matrix_over_the_cells_both_runs_measured() -> None:
    a = make_bundle("a")
    b = make_bundle("b", scale=2.0)
    a.decode = [c for c in a.decode if c.concurrency <= 64]
    b.decode = [c for c in b.decode if c.context_tokens <= 131072]
    rows = ratio_matrix(a, b)
    assert [r.context_tokens for r in rows] == [8192, 16384, 32768, 65536, 131072]  # 251K: only a measured it
    assert all([c.concurrency for c in r.cells] == [1, 2, 4, 8, 16, 32, 64] for r in rows)  # 128: only b
    by_key = {(r.context_tokens, c.concurrency): c for r in rows for c in r.cells}
    assert by_key[(8192, 1)].ratio == pytest.approx(2.0)
    assert by_key[(16384, 16)].ratio is None  # Looped in both
    assert by_key[(32768, 4)].ratio is None  # Failed in both
    b.decode = [c for c in b.decode if c.concurrency == 128]
    assert ratio_matrix(a, b) == []


def test_launch_options_parse_flags_values_and_quotes() -> None:
    options = launch_options('"$HOME/bin/vllm" serve m --tp 2 --trust-remote-code --port=8000 -n -1 --cfg \'{"a": 1}\'')
    assert options == {
        "command": "$HOME/bin/vllm serve m", "--tp": "2", "--trust-remote-code": "--trust-remote-code",
        "--port": "8000", "-n": "-1", "--cfg": '{"a": 1}',
    }
    assert launch_options('vllm serve "unbalanced --tp 2') == {"command": 'vllm serve "unbalanced', "--tp": "2"}
    assert launch_options(None) == {}


def test_field_diffs_name_what_differs_only() -> None:
    a = make_bundle("a", version="0.27.2", measured_at=day(1))
    b = make_bundle("b", version="0.28.0", gpu="B200", gpu_count=4)
    b.launch_command = a.launch_command.replace("--tensor-parallel-size 2", "--tensor-parallel-size 4").replace(
        "--trust-remote-code", "--enforce-eager"
    )
    assert field_diffs(a, b) == [
        ("GPU", "H200 NVL", "B200"),
        ("GPU count", "2", "4"),
        ("VRAM", "282 GB (2 × 141 GB)", "564 GB (4 × 141 GB)"),
        ("Version", "0.27.2", "0.28.0"),
        ("Launch --trust-remote-code", "--trust-remote-code", None),
        ("Launch --tensor-parallel-size", "2", "4"),
        ("Launch --enforce-eager", None, "--enforce-eager"),
    ]
    assert field_diffs(a, make_bundle("c")) == []


def test_field_diffs_show_missing_values_as_none() -> None:
    a, b = make_bundle("a", launch_command=None), make_bundle("b", model="Other")
    b.engine.commit = "abc123"
    diffs = field_diffs(a, b)
    assert ("Model", "Ling-3.0-flash-fp4", "Other") in diffs
    assert ("Commit", None, "abc123") in diffs
    assert ("Launch command", None, '$HOME/env/bin/vllm serve org/Model') in diffs


def test_field_diffs_name_how_the_runs_were_served_but_not_how_their_servers_were_launched() -> None:
    a, b = make_bundle("a"), make_served_bundle("b", gpu_count=2, model="Ling-3.0-flash-fp4", launch_command=make_bundle().launch_command)
    diffs = {label: (value_a, value_b) for label, value_a, value_b in field_diffs(a, b)}
    assert diffs["API"] == (None, "Chat completions (/v1/chat/completions), through the server's chat template")
    assert diffs["Decode GPUs"] == (None, "8 (tok/s per GPU is per decode GPU)") and diffs["Speculative decoding"] == (None, "eagle3, 3 draft tokens")
    assert not {"Server ready after", "Batch job", "Server log"} & set(diffs), "a launch's job, log and timing differ every time"
