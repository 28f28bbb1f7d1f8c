"""Internal consistency: each relation between a record's figures, broken by one edit, is named at its field."""

from __future__ import annotations

from pathlib import Path

from tests.builders import check_errors_at, edit_json, sitegen_check


def test_the_untouched_runs_are_consistent(bare_run: Path, seed_run: Path) -> None:
    checked = sitegen_check(bare_run, seed_run)
    assert (checked.exit_code, checked.errors) == (0, [])
    assert [line.split(": ")[1].split(" ")[0] for line in checked.verdicts[:2]] == ["consistent", "consistent"]


def test_output_tokens_that_total_times_window_does_not_make(bare_run: Path) -> None:
    edit_json(bare_run, lambda d: d["decode"][1].update(output_tokens=d["decode"][1]["output_tokens"] + 1))
    [line] = check_errors_at(bare_run, "$.decode[1].output_tokens")
    assert "output tokens, but total" in line


def test_a_page_figure_off_by_more_than_its_rounding(seed_run: Path) -> None:
    # 73.8 tok/s × 30 s = 2,214 tokens as printed; 12 % more is no rounding.
    edit_json(seed_run, lambda d: d["decode"][0].update(total_tok_s=82.7))
    assert check_errors_at(seed_run, "$.decode[0].output_tokens")


def test_per_request_rate_that_average_active_cannot_give(seed_run: Path) -> None:
    # The example: 36,655 tok/s per request with 0.12 requests active.
    edit_json(seed_run, lambda d: d["decode"][3].update(per_request_tok_s=36655.0, avg_active=0.12))
    [line] = check_errors_at(seed_run, "$.decode[3].total_tok_s")
    assert "average active 0.12 × per-request 36655 tok/s" in line
    [line] = check_errors_at(seed_run, "$.decode[3].per_request_tok_s")
    assert "faster than" in line


def test_more_requests_active_than_were_sent(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][0].update(avg_active=1.3))
    [line] = check_errors_at(seed_run, "$.decode[0].avg_active")
    assert line.endswith("1.3 requests active on average, more than the 1 sent at once")


def test_more_requests_finished_than_the_windows_tokens_allow(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][2].update(completed=1_000_000))  # 16,047 tokens at 4 at once
    [line] = check_errors_at(seed_run, "$.decode[2].completed")
    assert "1,000,000 requests finished" in line and "allow at most" in line


def test_per_request_faster_than_the_time_between_tokens(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][0].update(tbt_ms=20.0))  # 20 ms between tokens allows 50 tok/s, not 74.1
    assert check_errors_at(seed_run, "$.decode[0].per_request_tok_s")


def test_a_runner_window_slower_than_its_gaps(bare_run: Path) -> None:
    edit_json(bare_run, lambda d: d["decode"][0].update(tbt_ms=d["decode"][0]["tbt_ms"] * 0.9))
    [line] = check_errors_at(bare_run, "$.decode[0].per_request_tok_s")
    assert "slower than" in line


def test_prefill_rate_that_is_not_prompt_tokens_over_ttft(bare_run: Path, seed_run: Path) -> None:
    edit_json(bare_run, lambda d: d["prefill"][0].update(prompt_tok_s=d["prefill"][0]["prompt_tok_s"] * 1.001))
    assert check_errors_at(bare_run, "$.prefill[0].prompt_tok_s")
    edit_json(seed_run, lambda d: d["prefill"][2].update(prompt_tok_s=17900.0))  # 32,768 tokens in 2,036 ms: 16,100
    assert check_errors_at(seed_run, "$.prefill[2].prompt_tok_s")


def test_a_tail_below_its_median(bare_run: Path) -> None:
    edit_json(bare_run, lambda d: d["decode"][1].update(ttft_p99_ms=d["decode"][1]["ttft_p90_ms"] / 2))
    [line] = check_errors_at(bare_run, "$.decode[1].ttft_p99_ms")
    assert "below the" in line and "of ttft_p90_ms" in line


def test_a_repeated_cell_outside_its_repeats_and_a_wrong_spread(repeated_run: Path, tmp_path: Path) -> None:
    path = tmp_path / repeated_run.name
    path.write_bytes(repeated_run.read_bytes())  # without its records: consistency alone

    def change(document: dict) -> None:
        cell = document["decode"][0]
        cell["total_tok_s"] = max(r["total_tok_s"] or 0 for r in cell["repeats"]) * 1.05
        cell["total_tok_s_spread_pct"] += 1

    edit_json(path, change)
    [line] = check_errors_at(path, "$.decode[0].total_tok_s")
    assert "outside its repeats' range" in line
    assert check_errors_at(path, "$.decode[0].total_tok_s_spread_pct")


def test_a_ttft_longer_than_the_run_had_been_going(bare_run: Path) -> None:
    # The window began within seconds of the run's start: no request in it can have waited 1e9 ms.
    edit_json(bare_run, lambda d: d["decode"][0].update(ttft_ms=1e9, ttft_p90_ms=1e9, ttft_p99_ms=1e9))
    [line] = check_errors_at(bare_run, "$.decode[0].ttft_ms")
    assert "longer than the time from the run's start to the window's end allows" in line
    assert check_errors_at(bare_run, "$.decode[0].ttft_p99_ms")


def test_a_ttft_no_queue_behind_the_cold_prefill_explains(seed_run: Path) -> None:
    # A page records no window's start: its TTFT is held to its own cold prefill at that context.
    edit_json(seed_run, lambda d: d["decode"][0].update(ttft_ms=1e9))
    [line] = check_errors_at(seed_run, "$.decode[0].ttft_ms")
    assert "× 1 at once × the" in line and "cold prefill at this context" in line
