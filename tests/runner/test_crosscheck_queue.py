"""Queue detection from the server's own histograms, when the client was starved and every gauge read stale.

The case of a fresh-clone CI run: vLLM with --max-num-seqs 4 and 8 requests sent, its engine
starving the client and its own API process in every window. Only the first wave of four
finished inside the 3 s window (queue time 0), the scrapes read the gauges at 0, and the client
saw bursts. vLLM's TTFT and inter-token latency histograms still say what happened.
"""

from __future__ import annotations

import pytest

from runner.bundle.schema import ServerCheck
from runner.crosscheck import Scrape, server_check, server_queued, status
from runner.metrics import parse_prometheus
from runner.simulator.histogram import (  # vLLM's bounds
    ITL_BUCKETS,
    QUEUE_BUCKETS,
    TTFT_BUCKETS,
)


def histogram_lines(name: str, bounds: tuple[float, ...], observations: list[float]) -> list[str]:
    """Prometheus lines of a histogram holding `observations` (seconds)."""
    lines = [f'{name}_bucket{{engine="0",le="{le}"}} {sum(o <= le for o in observations)}' for le in bounds]
    lines.append(f'{name}_bucket{{engine="0",le="+Inf"}} {len(observations)}')
    return lines + [f'{name}_sum{{engine="0"}} {sum(observations)}', f'{name}_count{{engine="0"}} {len(observations)}']


def page(ttft: list[float], queue: list[float], itl: list[float], waiting: int = 0, running: int = 0) -> str:
    """A vLLM /metrics page with these histograms and gauges."""
    lines = [f'vllm:num_requests_waiting{{engine="0"}} {waiting}', f'vllm:num_requests_running{{engine="0"}} {running}',
             f'vllm:generation_tokens_total{{engine="0"}} {len(ttft) + len(itl)}']
    lines += histogram_lines("vllm:time_to_first_token_seconds", TTFT_BUCKETS, ttft)
    lines += histogram_lines("vllm:request_queue_time_seconds", QUEUE_BUCKETS, queue)
    lines += histogram_lines("vllm:inter_token_latency_seconds", ITL_BUCKETS, itl)
    return "\n".join(lines) + "\n"


def scrape(text: str, at: float, trip: float = 0.01) -> Scrape:
    return Scrape(samples=parse_prometheus(text), sent=at, received=at + trip)


def window(ttft: list[float], queue: list[float], itl: list[float], during: list[Scrape]) -> ServerCheck:
    """The server's account of a 3 s window that began on an empty server."""
    check = server_check(scrape(page([], [], []), 0.0), scrape(page(ttft, queue, itl), 3.0), during, 3.0)
    assert check is not None
    return check


def test_a_starved_queued_window_is_queued_by_the_servers_histograms() -> None:
    # Four seats for 3 s at 5 ms a step; four requests first, four more that waited 2.2 s for a seat.
    itl = [0.005] * (4 * 590)
    starved = window(ttft=[0.03] * 4 + [2.2] * 4, queue=[0.0] * 4, itl=itl,
                     during=[scrape(page([], [], []), 1.0, trip=1.6)])  # a slow scrape, gauges stale at 0
    assert starved.queued_share == 0.0 and starved.waiting_max == 0  # the two older signs saw nothing
    assert starved.active_mean == pytest.approx(3.93, abs=0.01)
    assert starved.first_token_waited_share == pytest.approx(0.5)
    assert server_queued(starved, 8)
    reason = "time between tokens 0.7 ms against the server's 5 ms (-86%, 99% of tokens arrived in bursts)"
    # Whatever the client saw: bursts, and even a full-looking average active.
    assert status(starved, reason, 7.0, 8) == "Requests queued"
    assert status(starved, None, 3.9, 8) == "Requests queued"


def test_a_starved_client_that_kept_too_few_requests_open_is_not_a_queue() -> None:
    # The server served every request at once (TTFT 15 ms) but had only 1.8 of 4 generating:
    # the client, starved, sent its replacements late. That is distortion, not the server's queue.
    starved_client = window(ttft=[0.015] * 6, queue=[0.0] * 2, itl=[0.004] * 1350, during=[])
    assert starved_client.active_mean == pytest.approx(1.8)
    assert starved_client.first_token_waited_share == 0.0
    assert not server_queued(starved_client, 4)
    assert status(starved_client, "TTFT 1,090 ms against the server's 15 ms", 1.0, 4) == "Distorted"


def test_a_full_window_with_slow_first_tokens_is_not_a_queue() -> None:
    # Every seat generating, first tokens slow (a long prefill): the seats were not short of N.
    full = window(ttft=[0.4] * 4, queue=[0.0] * 4, itl=[0.005] * (4 * 590), during=[])
    assert full.first_token_waited_share == 1.0 and full.active_mean >= 0.8 * 4
    assert not server_queued(full, 4)
    assert status(full, None, 3.95, 4) == "Valid"


def test_a_check_without_the_histogram_figures_keeps_the_older_signs() -> None:
    # A bundle written before these figures, or an engine without the histograms.
    assert not server_queued(ServerCheck(metrics="llama.cpp", waiting_max=0), 8)
    assert server_queued(ServerCheck(metrics="vllm", queued_share=0.5), 8)
