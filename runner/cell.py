"""Measuring one prefill point and one sustained-decode cell, and turning traces into figures."""

from __future__ import annotations

import asyncio
import bisect
import datetime as dt
import math
import statistics
import time
from collections.abc import Callable, Sequence

import msgspec
from msgspec import UNSET, UnsetType

from runner import crosscheck
from runner.bundle.schema import ClientCheck, DecodeCell, PrefillPoint
from runner.client import Client, Trace
from runner.crosscheck import Scrape, Scraper, ms, timed_scrape
from runner.errors import LoopDetected, RequestFailed
from runner.prompts import Prompt, PromptMaker
from runner.selfcheck import LoopLag, burst_share

PREFILL_FLOOR_TOK_S = 500.0
# A window the cross-check finds distorted is measured again, up to this many windows in all.
MAX_ATTEMPTS = 3
# /metrics is read this often during a window (at most), for the server's gauges.
SCRAPE_INTERVAL_S = 1.0


class Figures(msgspec.Struct, kw_only=True):
    """A decode window's figures, as DESIGN.md defines them."""

    total_tok_s: float
    per_request_tok_s: float | None
    ttft_ms: float | None
    tbt_ms: float | None
    avg_active: float
    completed: int
    output_tokens: int
    measured_s: float
    ttft_p90_ms: float | UnsetType = UNSET
    ttft_p99_ms: float | UnsetType = UNSET
    tbt_p90_ms: float | UnsetType = UNSET
    tbt_p99_ms: float | UnsetType = UNSET


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), interpolating linearly between the closest ranks: p50 is the median."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def tail_percentiles(ttfts: Sequence[float], gaps: Sequence[float]) -> dict[str, float]:
    """p90 and p99 of the requests' TTFTs and time between tokens (seconds in, ms out); none without requests."""
    found = {}
    for name, values in (("ttft", ttfts), ("tbt", gaps)):
        if values:
            found[f"{name}_p90_ms"] = percentile(values, 90) * 1000
            found[f"{name}_p99_ms"] = percentile(values, 99) * 1000
    return found


def decode_figures(traces: Sequence[Trace], start: float, end: float) -> Figures:
    """Figures of the window [start, end] from every request streamed in it."""
    window = end - start
    tokens = completed = 0
    active = 0.0
    rates, gaps, ttfts = [], [], []
    for trace in traces:
        seen = bisect.bisect_right(trace.times, end)
        if not seen:
            continue
        count = sum(trace.counts[:seen])
        first, last = trace.times[0], trace.times[seen - 1]
        tokens += count
        ttfts.append(first - trace.start)
        if count > 1 and last > first:
            rates.append((count - 1) / (last - first))
            gaps.append((last - first) / (count - 1))
        done = trace.finished and trace.end is not None and trace.end <= end
        completed += done
        active += max(0.0, (trace.end if done else end) - max(first, start))
    return Figures(
        total_tok_s=tokens / window,
        per_request_tok_s=statistics.median(rates) if rates else None,
        ttft_ms=statistics.median(ttfts) * 1000 if ttfts else None,
        tbt_ms=statistics.median(gaps) * 1000 if gaps else None,
        avg_active=active / window,
        completed=completed,
        output_tokens=tokens,
        measured_s=window,
        **tail_percentiles(ttfts, gaps),
    )


class CellRunner:
    """Everything measuring needs: the client, the prompt maker and the run's settings."""

    def __init__(self, client: Client, maker: PromptMaker, model: str, max_output: int,
                 ignore_eos: bool, scraper: Scraper | None) -> None:
        """Measure `model` through `client`; `scraper` reads the server's /metrics, where it has one."""
        self.client = client
        self.maker = maker
        self.model = model
        self.max_output = max_output
        self.ignore_eos = ignore_eos
        self.scraper = scraper
        self.live_tokens = 0
        self.on_phase: Callable[[str], None] = lambda word: None  # told "warming", then "measuring"

    async def one_token(self, prompt: Prompt) -> Trace:
        """Send `prompt` for one output token; the trace times its prefill.

        The wait allowed for it grows with the prompt: the stall timeout plus a second per
        PREFILL_FLOOR_TOK_S tokens, so a million-token prefill is not taken for a stall.
        """
        silence = self.client.stall_timeout + prompt.tokens / PREFILL_FLOOR_TOK_S
        body = self.maker.body(prompt.prompt, 1, self.ignore_eos)
        trace = await self.client.stream(body, Trace(), self.model, silence=silence)
        if trace.first_token_at is None:
            raise RequestFailed("the server finished the request without sending a token")
        return trace

    async def prefill(self, context: int, prompt: Prompt) -> PrefillPoint:
        """One cold request: prompt tok/s = prompt tokens / TTFT."""
        try:
            trace = await self.one_token(prompt)
        except RequestFailed as exc:
            return PrefillPoint(context_tokens=context, status="Failed", error=str(exc), prompt_tokens=prompt.tokens)
        ttft = trace.first_token_at - trace.start
        tokens = trace.prompt_tokens or prompt.tokens
        return PrefillPoint(context_tokens=context, status="Valid", prompt_tok_s=tokens / ttft,
                            ttft_ms=ttft * 1000, prompt_tokens=tokens)

    async def warm(self, prompts: Sequence[Prompt]) -> None:
        """Prefill every prompt once so the window measures decode, not prefill."""
        await asyncio.gather(*(self.one_token(p) for p in prompts))

    async def decode(self, context: int, prompts: Sequence[Prompt], duration: float) -> DecodeCell:
        """Measure the cell; a window the cross-check finds distorted is measured again, MAX_ATTEMPTS in all.

        The last window is kept. A queue the server reported keeps its status even if every window
        was distorted; the reason is recorded beside it all the same.
        """
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if attempt > 1:
                self.on_phase("retrying")
            cell = await self.decode_once(context, prompts, duration)
            if isinstance(cell.client, ClientCheck):
                cell.client.attempts = attempt
            if not cell.distortion:  # also a Requests queued cell: its figures are published too
                break
        return cell

    async def decode_once(self, context: int, prompts: Sequence[Prompt], duration: float) -> DecodeCell:
        """Warm the prompts, then hold len(prompts) streams for `duration` seconds, checked both ways."""
        concurrency = len(prompts)
        base = {"context_tokens": context, "concurrency": concurrency, "prompt_tokens": prompts[0].tokens}
        self.on_phase("warming")
        try:
            await self.warm(prompts)
        except RequestFailed as exc:
            return DecodeCell(**base, status="Failed", error=f"warm-up: {exc}")
        traces: list[Trace] = []
        scrapes: list[Scrape] = []
        outcome: list[BaseException] = []
        stop = asyncio.Event()

        async def hold(prompt: Prompt) -> None:
            body = self.maker.body(prompt.prompt, self.max_output, self.ignore_eos)
            while not stop.is_set():
                trace = Trace(detect_loops=True)
                traces.append(trace)
                try:
                    await self.client.stream(body, trace, self.model, silence=None)
                except (RequestFailed, LoopDetected) as exc:
                    outcome.append(exc)
                    stop.set()

        async def sample_metrics() -> None:
            interval = min(SCRAPE_INTERVAL_S, duration / 5)
            while True:
                await asyncio.sleep(interval)
                scrapes.append(await timed_scrape(self.scraper))

        async def watch() -> None:
            """Count live tokens; fail the cell when a streaming request goes silent too long."""
            stall = self.client.stall_timeout
            while True:
                self.live_tokens = sum(t.tokens for t in traces)
                now = time.perf_counter()
                if any(t.times and not t.finished and now - t.last_seen > stall for t in traces):
                    outcome.append(RequestFailed(f"no data from the server for {stall:g} s mid-stream"))
                    stop.set()
                await asyncio.sleep(min(0.25, stall / 4))

        before = await timed_scrape(self.scraper) if self.scraper else None
        lag = LoopLag()
        lag.start()
        started_at = dt.datetime.now(dt.timezone.utc)
        self.on_phase("measuring")
        start = time.perf_counter()
        tasks = [asyncio.create_task(hold(p)) for p in prompts] + [asyncio.create_task(watch())]
        if self.scraper is not None:
            tasks.append(asyncio.create_task(sample_metrics()))
        try:
            try:
                await asyncio.wait_for(stop.wait(), timeout=duration)
            except TimeoutError:
                pass
            end = time.perf_counter()
        finally:
            # Also when the run is stopped (Ctrl-C cancels this task): a stream, scrape or loop
            # probe left running would reach the closed client and print its error as a traceback.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            lag_p99, lag_max, cpu = await lag.stop()
        self.live_tokens = 0
        after = await timed_scrape(self.scraper) if self.scraper else None

        if outcome and isinstance(outcome[0], LoopDetected):
            return DecodeCell(**base, status="Looped", completed=0, output_tokens=0)
        if outcome:
            return DecodeCell(**base, status="Failed", error=str(outcome[0]))
        figures = decode_figures(traces, start, end)
        server = crosscheck.server_check(before, after, scrapes, end - start) if before and after else None
        itl_s = server.itl_mean_ms / 1000 if server and server.itl_mean_ms else None
        client = ClientCheck(loop_lag_p99_ms=ms(lag_p99), loop_lag_max_ms=ms(lag_max), cpu_share=cpu,
                             burst_share=burst_share(traces, start, end, itl_s),
                             overrun_ms=max(0.0, end - start - duration) * 1000)
        reason = crosscheck.distortion(crosscheck.client_times(traces, end), server, client, duration,
                                       figures.output_tokens, figures.per_request_tok_s)
        status = crosscheck.status(server, reason, figures.avg_active, concurrency)
        cell = DecodeCell(**base, status=status, **msgspec.structs.asdict(figures), window_started_at=started_at,
                          client=client, distortion=reason or msgspec.UNSET)
        if server is not None:
            cell.server = server
        return cell

