"""Measuring one prefill point and one sustained-decode cell, and turning traces into figures."""

from __future__ import annotations

import asyncio
import bisect
import math
import statistics
import time
from collections.abc import Callable, Sequence

import msgspec
from msgspec import UNSET, UnsetType

from runner.client import Client, LoopDetected, RequestFailed, Trace
from runner.prompts import Prompt, PromptMaker
from runner.schema import DecodeCell, PrefillPoint

QUEUED_ACTIVE_FRACTION = 0.95
QUEUED_SAMPLE_FRACTION = 0.25
PREFILL_FLOOR_TOK_S = 500.0


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


def queued(samples: Sequence[float], avg_active: float, concurrency: int) -> bool:
    """Did requests wait in the server's queue during the window?

    With a queue gauge: it was above zero in at least two samples and a quarter of them;
    brief blips are the scheduler admitting replacement requests, not a queue. Without
    one: average active requests stayed under 95 % of those sent.
    """
    if samples:
        waiting = sum(1 for s in samples if s > 0)
        return waiting >= max(2, math.ceil(QUEUED_SAMPLE_FRACTION * len(samples)))
    return avg_active < QUEUED_ACTIVE_FRACTION * concurrency


class CellRunner:
    """Everything measuring needs: the client, the prompt maker and the run's settings."""

    def __init__(self, client: Client, maker: PromptMaker, model: str, max_output: int,
                 ignore_eos: bool, queue_probe: Callable | None) -> None:
        """Measure `model` through `client`; `queue_probe` is an async () -> waiting count or None."""
        self.client = client
        self.maker = maker
        self.model = model
        self.max_output = max_output
        self.ignore_eos = ignore_eos
        self.queue_probe = queue_probe
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
        """Warm the prompts, then hold len(prompts) streams for `duration` seconds."""
        concurrency = len(prompts)
        base = {"context_tokens": context, "concurrency": concurrency, "prompt_tokens": prompts[0].tokens}
        self.on_phase("warming")
        try:
            await self.warm(prompts)
        except RequestFailed as exc:
            return DecodeCell(**base, status="Failed", error=f"warm-up: {exc}")
        traces: list[Trace] = []
        samples: list[float] = []
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

        async def sample_queue() -> None:
            interval = min(0.25, duration / 20)
            while True:
                waiting = await self.queue_probe()
                if waiting is not None:
                    samples.append(waiting)
                await asyncio.sleep(interval)

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

        self.on_phase("measuring")
        start = time.perf_counter()
        tasks = [asyncio.create_task(hold(p)) for p in prompts] + [asyncio.create_task(watch())]
        if self.queue_probe is not None:
            tasks.append(asyncio.create_task(sample_queue()))
        try:
            await asyncio.wait_for(stop.wait(), timeout=duration)
        except TimeoutError:
            pass
        end = time.perf_counter()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.live_tokens = 0

        if outcome and isinstance(outcome[0], LoopDetected):
            return DecodeCell(**base, status="Looped", completed=0, output_tokens=0)
        if outcome:
            return DecodeCell(**base, status="Failed", error=str(outcome[0]))
        figures = decode_figures(traces, start, end)
        status = "Requests queued" if queued(samples, figures.avg_active, concurrency) else "Valid"
        return DecodeCell(**base, status=status, **msgspec.structs.asdict(figures))
