"""Measuring one prefill point and one sustained-decode cell, and turning traces into figures."""

from __future__ import annotations

import asyncio
import bisect
import datetime as dt
import time
from collections.abc import Callable, Sequence

import msgspec

from runner import crosscheck
from runner.bundle.records import MICROSECONDS, RequestRecord, WindowFigures, window_figures
from runner.bundle.schema import ClientCheck, DecodeCell, PrefillPoint
from runner.client import Client, Trace
from runner.crosscheck import Scrape, Scraper, ms, timed_scrape
from runner.energy import EnergyMeter, WindowEnergy
from runner.errors import LoopDetected, RequestFailed
from runner.prompts import Prompt, PromptMaker
from runner.selfcheck import LoopLag, burst_share

PREFILL_FLOOR_TOK_S = 500.0
# A window the cross-check finds distorted is measured again, up to this many windows in all.
MAX_ATTEMPTS = 3
# /metrics is read this often during a window (at most), for the server's gauges.
SCRAPE_INTERVAL_S = 1.0


def window_records(traces: Sequence[Trace], start: float, end: float) -> tuple[int, list[RequestRecord]]:
    """The window [start, end]'s length and each request streamed in it as records: whole
    microseconds from the window's start, tokens up to the window's end."""
    def at(moment: float) -> int:
        return round((moment - start) * MICROSECONDS)

    records = []
    for trace in traces:
        seen = bisect.bisect_right(trace.times, end)
        arrivals = [at(t) for t in trace.times[:seen]]
        done = trace.finished and trace.end is not None and trace.end <= end
        records.append(RequestRecord(
            start_us=at(trace.start), gaps_us=[b - a for a, b in zip([0, *arrivals], arrivals)],
            counts=trace.counts[:seen], tokens=sum(trace.counts[:seen]),
            end_us=at(trace.end) if done and trace.end is not None else None,
            finish_reason=trace.finish_reason if done else None, status="finished" if done else "cut"))
    return at(end), records


def decode_figures(traces: Sequence[Trace], start: float, end: float) -> WindowFigures:
    """Figures of the window [start, end] from every request streamed in it, by way of their records
    (runner.bundle.records.window_figures), so the records recompute them exactly."""
    return window_figures(*window_records(traces, start, end))


class CellRunner:
    """Everything measuring needs: the client, the prompt maker and the run's settings."""

    def __init__(self, client: Client, maker: PromptMaker, model: str, max_output: int,
                 ignore_eos: bool, scraper: Scraper | None, record_endpoints: bool = False,
                 energy: EnergyMeter | None = None) -> None:
        """Measure `model` through `client`; `scraper` reads the server's /metrics, where it has one;
        `record_endpoints`: each cell records how every metrics endpoint's scrapes went; `energy`
        reads the GPUs' energy over each window."""
        self.client = client
        self.maker = maker
        self.model = model
        self.max_output = max_output
        self.ignore_eos = ignore_eos
        self.scraper = scraper
        self.record_endpoints = record_endpoints
        self.energy = energy
        self.live_tokens = 0
        self.on_phase: Callable[[str], None] = lambda word: None  # told "warming", then "measuring"
        # The records of the last window measured, for the cell that keeps it (None: it gave no figures).
        self.last_records: tuple[int, list[RequestRecord]] | None = None

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
        self.last_records = None
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
                    if not trace.tokens:  # asking again at once would spin: the server answers nothing
                        raise RequestFailed("the server finished a request without sending a token")
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
        if self.energy is not None:
            await self.energy.start()
        start = time.perf_counter()
        tasks = [asyncio.create_task(hold(p)) for p in prompts] + [asyncio.create_task(watch())]
        if self.scraper is not None:
            tasks.append(asyncio.create_task(sample_metrics()))
        energy: WindowEnergy | None = None
        try:
            try:
                await asyncio.wait_for(stop.wait(), timeout=duration)
            except TimeoutError:
                pass
            end = time.perf_counter()
            if self.energy is not None:  # read before the streams stop, so the joules cover the tokens' time
                energy = await self.energy.stop()
        finally:
            if self.energy is not None:
                self.energy.cancel()  # Ctrl-C or a failure: no sampler left running
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
        window, records = window_records(traces, start, end)
        figures = window_figures(window, records)
        self.last_records = (window, records) if figures.output_tokens else None
        if not figures.output_tokens:
            return DecodeCell(**base, status="Failed", error="no request received a token during the window")
        problem = crosscheck.evidence_problem(before, after, scrapes) if before and after else None
        server = crosscheck.server_check(before, after, scrapes, end - start) if before and after and not problem else None
        itl_s = server.itl_mean_ms / 1000 if server and server.itl_mean_ms else None
        client = ClientCheck(loop_lag_p99_ms=ms(lag_p99), loop_lag_max_ms=ms(lag_max), cpu_share=cpu,
                             burst_share=burst_share(traces, start, end, itl_s),
                             overrun_ms=max(0.0, end - start - duration) * 1000)
        reason = crosscheck.distortion(crosscheck.client_times(traces, end), server, client, duration,
                                       figures.output_tokens, figures.per_request_tok_s)
        reason = "; ".join(filter(None, (problem, reason))) or None
        status = "Distorted" if problem else crosscheck.status(server, reason, figures.avg_active, concurrency)
        cell = DecodeCell(**base, status=status, **msgspec.structs.asdict(figures), window_started_at=started_at,
                          client=client, distortion=reason or msgspec.UNSET)
        if energy is not None:  # the window's prompts count once each request began inside it
            began = sum(1 for record in records if record.start_us >= 0)
            cell.energy = energy.check(figures.output_tokens, figures.output_tokens + base["prompt_tokens"] * began)
        if server is not None:
            cell.server = server
            if self.record_endpoints:
                server.endpoints = crosscheck.endpoint_checks([before, *scrapes, after])
            speculative = crosscheck.speculative_check(before, after, scrapes)
            if speculative is not None:
                cell.speculative = speculative
        return cell

