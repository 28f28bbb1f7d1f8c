"""The cross-check's arithmetic: histogram changes, the server's account of a window, the verdict."""

from __future__ import annotations

import pytest

from runner.bundle.schema import ClientCheck, ServerCheck
from runner.client import Trace
from runner.crosscheck import Scrape, client_times, distortion, server_check, status
from runner.metrics import ENGINE_METRICS, engine_metrics, histogram, parse_prometheus
from runner.selfcheck import burst_share

BOUNDS = ("0.01", "0.025", "0.05", "+Inf")


def vllm_text(generated: int, itl: list[int], itl_sum: float, ttft: list[int], ttft_sum: float,
              waiting: int = 0, running: int = 1) -> str:
    """A vLLM /metrics page with cumulative bucket counts `itl` and `ttft` over BOUNDS."""
    lines = [f'vllm:num_requests_waiting{{engine="0"}} {waiting}', f'vllm:num_requests_running{{engine="0"}} {running}',
             f'vllm:generation_tokens_total{{engine="0"}} {generated}']
    for name, counts, total in (("vllm:inter_token_latency_seconds", itl, itl_sum),
                                ("vllm:time_to_first_token_seconds", ttft, ttft_sum)):
        lines += [f'{name}_bucket{{engine="0",le="{le}"}} {n}' for le, n in zip(BOUNDS, counts)]
        lines += [f'{name}_sum{{engine="0"}} {total}', f'{name}_count{{engine="0"}} {counts[-1]}']
    return "\n".join(lines) + "\n"


def scrape(text: str, at: float = 0.0, trip: float = 0.01) -> Scrape:
    return Scrape(samples=parse_prometheus(text), sent=at, received=at + trip)


def test_one_table_names_each_engines_metrics() -> None:
    assert [row.engine for row in ENGINE_METRICS] == ["vllm", "sglang", "llama.cpp", "tgi"]
    sglang = engine_metrics(parse_prometheus('sglang:num_running_reqs{tp_rank="0"} 3\n'))
    assert sglang is not None and sglang.itl_seconds == "sglang:inter_token_latency_seconds"
    assert engine_metrics(parse_prometheus("something_else 1\n")) is None


def sglang_text(ended_tokens: int, itl_count: int, itl_sum: float, ttft_count: int, ttft_sum: float) -> str:
    """An SGLang /metrics page: `ended_tokens` credited by requests that ended; all ITL and TTFT observations
    in BOUNDS' 0.025 bucket (SGLang adds a chunk's tokens to the ITL count, one per token)."""
    labels = 'model_name="m"'
    lines = [f"sglang:num_queue_reqs{{{labels}}} 0", f"sglang:num_running_reqs{{{labels}}} 4",
             f'sglang:generation_tokens_total{{{labels},is_streaming="true"}} {ended_tokens}']
    for name, count, total in (("sglang:inter_token_latency_seconds", itl_count, itl_sum),
                               ("sglang:time_to_first_token_seconds", ttft_count, ttft_sum)):
        lines += [f'{name}_bucket{{{labels},le="{le}"}} {0 if le == "0.01" else count}' for le in BOUNDS]
        lines += [f"{name}_sum{{{labels}}} {total}", f"{name}_count{{{labels}}} {count}"]
    return "\n".join(lines) + "\n"


def test_sglang_window_counts_tokens_from_its_histograms() -> None:
    """SGLang credits generation_tokens_total when a request ends, all at once: no request ended in
    this window, yet 4 streams gave 400 tokens, as its TTFT (4) and ITL (396) counts say."""
    before = scrape(sglang_text(512, 100, 2.0, 2, 0.1))
    after = scrape(sglang_text(512, 496, 9.92, 6, 0.3), at=5)
    check = server_check(before, after, [], 5.0)
    assert check.metrics == "sglang" and check.generated_tokens == 400 and check.requests == 4
    assert check.itl_per_token_ms == pytest.approx(check.itl_mean_ms) == pytest.approx(20.0)


def test_histogram_change_mean_and_median() -> None:
    before = histogram(parse_prometheus(vllm_text(0, [1, 1, 1, 1], 0.005, [0, 0, 0, 0], 0)), "vllm:inter_token_latency_seconds")
    after = histogram(parse_prometheus(vllm_text(0, [1, 5, 9, 9], 0.245, [0, 0, 0, 0], 0)), "vllm:inter_token_latency_seconds")
    change = after.minus(before)
    assert change.count == 8 and change.mean == pytest.approx(0.03)
    # Half of 8 observations is the 4th: all four in (0.01, 0.025] lie below it, linearly.
    assert change.quantile(0.5) == pytest.approx(0.025)
    assert change.share_above(0.025) == pytest.approx(0.5)


def test_server_check_of_a_window() -> None:
    before = scrape(vllm_text(100, [0, 0, 0, 0], 0, [0, 0, 0, 0], 0))
    after = scrape(vllm_text(1100, [0, 990, 990, 990], 19.8, [1, 10, 10, 10], 0.15), at=5)
    during = [scrape(vllm_text(500, [0] * 4, 0, [0] * 4, 0, waiting=2, running=4), at=1),
              scrape(vllm_text(500, [0] * 4, 0, [0] * 4, 0, waiting=9, running=4), at=2, trip=3.0)]  # stale
    check = server_check(before, after, during, 5.0)
    assert check.generated_tokens == 1000 and check.requests == 10
    assert check.itl_mean_ms == pytest.approx(20.0) and check.itl_per_token_ms == pytest.approx(20.0)
    assert check.ttft_mean_ms == pytest.approx(15.0)
    assert check.waiting_max == 9 and check.waiting_share == 1.0 and check.stale_scrapes == 1 and check.scrape_max_ms == pytest.approx(3000)


def _trace(start: float, times: list[float]) -> Trace:
    trace = Trace()
    trace.start, trace.times, trace.counts = start, times, [1] * len(times)
    return trace


def test_bursts_and_a_fast_client_time_between_tokens_are_distortion() -> None:
    steady = _trace(0.0, [0.02 * i + 0.01 for i in range(100)])
    burst = _trace(0.0, [0.01] + [1.9] * 99)  # the whole stream in one read at the end
    server = ServerCheck(metrics="vllm", itl_per_token_ms=20.0, itl_mean_ms=20.0, ttft_mean_ms=10.0)
    assert burst_share([steady], 0, 2, 0.02) == 0 and burst_share([burst], 0, 2, 0.02) == pytest.approx(98 / 99)
    assert distortion(client_times([steady], 2.0), server, ClientCheck(), 2.0) is None
    reason = distortion(client_times([burst], 2.0), server, ClientCheck(burst_share=0.99), 2.0)
    assert reason and "time between tokens" in reason and "99% of tokens arrived in bursts" in reason


def test_a_late_first_token_a_lagging_loop_and_a_late_window_are_distortion() -> None:
    server = ServerCheck(metrics="vllm", ttft_mean_ms=10.0)
    late = _trace(0.0, [0.04])
    assert "TTFT 40.0 ms against the server's 10.0 ms" in distortion(client_times([late], 1.0), server, ClientCheck(), 5)
    assert distortion(client_times([_trace(0.0, [0.015])], 1.0), server, ClientCheck(), 5) is None
    lagging = ClientCheck(loop_lag_p99_ms=80.0, cpu_share=0.97, overrun_ms=2400.0)
    reason = distortion(client_times([], 1.0), None, lagging, 5.0)
    assert reason == ("the client's event loop lagged 80 ms (99th percentile); the client used 97% of its core; "
                      "the window ended 2.40 s late")


def test_status_from_queue_signs_and_distortion() -> None:
    calm = ServerCheck(metrics="vllm", queued_share=0.0, waiting_share=0.0, waiting_seen=0)
    assert status(calm, None, 3.9, 4) == "Valid"
    assert status(calm, None, 3.1, 4) == "Requests queued"  # average active alone, whatever a stale gauge said
    assert status(calm, "bursts", 3.1, 4) == "Distorted"  # bursts shorten active time too
    assert status(ServerCheck(metrics="vllm", queued_share=0.5), "bursts", 4.0, 4) == "Requests queued"
    assert status(ServerCheck(metrics="vllm", waiting_share=1.0, waiting_seen=4), None, 4.0, 4) == "Requests queued"
    assert status(ServerCheck(metrics="vllm", waiting_share=1.0, waiting_seen=1), None, 4.0, 4) == "Valid"  # a blip
    assert status(None, None, 3.5, 4) == "Valid" and status(None, None, 3.0, 4) == "Requests queued"
    # Every scrape answered late, but one saw requests waiting: with too few active, a queue, not distortion.
    late = ServerCheck(metrics="vllm", running_max=4, waiting_max=4)
    assert status(late, "TTFT 900 ms against the server's 400 ms", 3.9, 8) == "Requests queued"
    assert status(ServerCheck(metrics="vllm", running_max=1, waiting_max=0), "bursts", 0.3, 1) == "Distorted"


def test_a_per_request_figure_off_the_servers_latency_is_distortion() -> None:
    server = ServerCheck(metrics="vllm", itl_per_token_ms=2.0)  # 500 tok/s
    assert distortion(client_times([], 1.0), server, ClientCheck(), 5, per_request_tok_s=505.0) is None
    reason = distortion(client_times([], 1.0), server, ClientCheck(), 5, per_request_tok_s=36_655.0)
    assert reason == "36,655.0 tok/s per request against the 500.0 the server's inter-token latency gives (+7231.0%)"
    assert "(-3.0%)" in distortion(client_times([], 1.0), server, ClientCheck(), 5, per_request_tok_s=485.0)


def test_tokens_the_client_missed_are_distortion() -> None:
    server = ServerCheck(metrics="vllm", generated_tokens=1000)
    assert distortion(client_times([], 1.0), server, ClientCheck(), 5, 995) is None
    assert "the client counted 960 tokens, the server generated 1,000 (-4.0%)" in distortion(
        client_times([], 1.0), server, ClientCheck(), 5, 960)
