"""The scheduler: asyncio continuous batching on a virtual clock.

One loop admits waiting requests (FCFS, bounded by max_num_seqs and KV blocks),
prefills the new ones one after another, then runs one decode step for every
sequence that has its first token. Each phase advances an absolute deadline by
its modelled duration (see runner.simulator.config) and sleeps until it, so
timings hold on average even when the event loop is late.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from typing import TextIO

import msgspec

from runner.simulator.config import SimConfig
from runner.simulator.histogram import (
    ITL_BUCKETS,
    QUEUE_BUCKETS,
    TTFT_BUCKETS,
    Histogram,
)
from runner.simulator.kv import BlockPool, PrefixCache, blocks_for
from runner.simulator.textgen import TextSource, output_palette
from runner.simulator.tokenizer import Tokenizer

# When the event loop falls further behind than this, the clock jumps instead of catching up.
MAX_LAG_S = 0.5


class Emission(msgspec.Struct, gc=False):
    """Tokens one request got from one engine phase; finish_reason set on its last."""

    tokens: list[int]
    finish_reason: str | None = None


class EngineStats(msgspec.Struct, kw_only=True):
    """A snapshot of the engine's gauges and counters (what /metrics exposes)."""

    running: int
    waiting: int
    kv_usage: float
    prompt_tokens_total: int
    generation_tokens_total: int
    prefix_cache_queries_total: int
    prefix_cache_hits_total: int
    finished_total: dict[str, int]
    ttft: Histogram
    itl: Histogram
    queue_time: Histogram


class SimRequest:
    """One generation request inside the engine; its emissions arrive on `events`."""

    __slots__ = ("id", "prompt", "max_tokens", "limit", "limit_reason", "text", "generated",
                 "cached_tokens", "blocks", "done", "events", "arrived", "last_emit")

    def __init__(self, request_id: int, prompt: list[int], max_tokens: int, limit: int,
                 limit_reason: str, text: TextSource) -> None:
        """A request that will produce `limit` tokens and then finish with `limit_reason`."""
        self.id = request_id
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.limit = limit
        self.limit_reason = limit_reason
        self.text = text
        self.generated = 0
        self.cached_tokens = 0
        self.blocks = 0
        self.done = False
        self.events: asyncio.Queue[Emission] = asyncio.Queue()
        self.arrived = self.last_emit = 0.0


class BatchEngine:
    """Continuous-batching scheduler over a simulated KV cache."""

    def __init__(self, config: SimConfig, tokenizer: Tokenizer, token_log: TextIO | None = None) -> None:
        """An idle engine; call start() inside a running event loop.

        With `token_log`, every arrival and every emission is written to it as a JSON line
        (`{"r": request id, "t": wall-clock seconds, "n": tokens}`, n = 0 on arrival): the
        server's own record that the runner's figures are proven against.
        """
        self.config = config
        self._pool = BlockPool(config.num_gpu_blocks)
        self._cache = PrefixCache(config.block_size, config.num_gpu_blocks, config.enable_prefix_caching)
        self._palette = output_palette(tokenizer)
        self._loop_tokens = tokenizer.encode(config.loop_text)
        self._waiting: collections.deque[SimRequest] = collections.deque()
        self._running: dict[int, SimRequest] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._next_id = 0
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self._prefix_queries = 0
        self._prefix_hits = 0
        self._finished: collections.Counter[str] = collections.Counter()
        self._ttft, self._itl, self._queue = Histogram(TTFT_BUCKETS), Histogram(ITL_BUCKETS), Histogram(QUEUE_BUCKETS)
        self._token_log = token_log
        # Called with generation_tokens_total after every phase that produced tokens.
        self.on_tokens: Callable[[int], None] | None = None

    def start(self) -> None:
        """Start the scheduler loop on the running event loop."""
        self._task = asyncio.create_task(self._schedule(), name="sim-engine")

    async def stop(self) -> None:
        """Stop scheduling and abort every request, waking their readers."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for req in [*self._waiting, *self._running.values()]:
            self.abort(req)

    def submit(self, prompt: list[int], max_tokens: int, ignore_eos: bool, arrived: float | None = None) -> SimRequest:
        """Queue a request for `max_tokens` tokens (fewer if EOS applies); returns it.

        `arrived` is the loop time the request reached the server (default: now).
        """
        eos = self.config.eos_after_tokens
        if eos is not None and not ignore_eos and eos < max_tokens:
            limit, reason = eos, "stop"
        else:
            limit, reason = max_tokens, "length"
        text = TextSource(self._palette, self._loop_tokens, self.config.loop_after_tokens,
                          seed=hash((self.config.seed, self._next_id)))
        req = SimRequest(self._next_id, prompt, max_tokens, limit, reason, text)
        now = asyncio.get_running_loop().time()
        req.arrived = now if arrived is None else arrived
        self._log(req, 0, req.arrived - now)
        self._next_id += 1
        self._waiting.append(req)
        self._wake.set()
        return req

    def abort(self, req: SimRequest) -> None:
        """End `req` now (client gone or server stopping), freeing its slot and blocks."""
        if req.done:
            return
        if req.id in self._running:
            self._release(req)
        else:
            self._waiting.remove(req)
            req.done = True
        self._finished["abort"] += 1
        req.events.put_nowait(Emission([], "abort"))

    def stats(self) -> EngineStats:
        """Current gauges and counters."""
        return EngineStats(
            running=len(self._running),
            waiting=len(self._waiting),
            kv_usage=self._pool.usage,
            prompt_tokens_total=self.prompt_tokens_total,
            generation_tokens_total=self.generation_tokens_total,
            prefix_cache_queries_total=self._prefix_queries,
            prefix_cache_hits_total=self._prefix_hits,
            finished_total=dict(self._finished),
            ttft=self._ttft.copy(), itl=self._itl.copy(), queue_time=self._queue.copy(),
        )

    def _log(self, req: SimRequest, tokens: int, offset: float = 0.0) -> None:
        """One line of the token log (stamped now + `offset` seconds), when there is one."""
        if self._token_log is not None:
            self._token_log.write(f'{{"r":{req.id},"t":{time.time() + offset:.6f},"n":{tokens}}}\n')

    def _release(self, req: SimRequest) -> None:
        """Take a running request out of the batch and free its KV blocks."""
        del self._running[req.id]
        self._pool.give_back(req.blocks)
        req.done = True

    def _admit(self) -> None:
        """Move waiting requests into the batch while slots and KV blocks allow (FCFS)."""
        cfg = self.config
        while self._waiting and len(self._running) < cfg.max_num_seqs:
            req = self._waiting[0]
            blocks = blocks_for(len(req.prompt) + req.max_tokens, cfg.block_size)
            if not self._pool.try_take(blocks):
                return
            self._waiting.popleft()
            self._queue.observe(asyncio.get_running_loop().time() - req.arrived)
            req.blocks = blocks
            req.cached_tokens = self._cache.cached_tokens(req.prompt)
            self._prefix_queries += len(req.prompt)
            self._prefix_hits += req.cached_tokens
            self._running[req.id] = req

    def _emit(self, req: SimRequest, count: int) -> None:
        """Give `req` up to `count` more tokens, finishing it at its limit."""
        count = min(count, req.limit - req.generated)
        now = asyncio.get_running_loop().time()
        if req.generated == 0:
            self._ttft.observe(now - req.arrived)
        else:
            self._itl.observe(now - req.last_emit)
        req.last_emit = now
        self._log(req, count)
        req.generated += count
        self.generation_tokens_total += count
        finish = None
        if req.generated >= req.limit:
            finish = req.limit_reason
            self._finished[finish] += 1
            self._release(req)
        req.events.put_nowait(Emission(req.text.take(count), finish))

    def _notify(self) -> None:
        """Tell the listener how many tokens have been generated so far."""
        if self.on_tokens is not None:
            self.on_tokens(self.generation_tokens_total)

    async def _schedule(self) -> None:
        """The scheduler loop: admit, prefill new requests, decode one step; repeat."""
        loop = asyncio.get_running_loop()
        cfg = self.config
        clock = loop.time()
        while True:
            if not self._running and not self._waiting:
                self._wake.clear()
                await self._wake.wait()
                clock = loop.time()
            clock = max(clock, loop.time() - MAX_LAG_S)
            self._admit()
            for req in [r for r in self._running.values() if r.generated == 0]:
                clock += (len(req.prompt) - req.cached_tokens) / cfg.prefill_tok_s
                await _sleep_until(loop, clock)
                if req.done:
                    continue
                self.prompt_tokens_total += len(req.prompt)
                self._cache.insert(req.prompt)
                self._emit(req, 1)
                self._notify()
            batch = [r for r in self._running.values() if r.generated > 0]
            if not batch:
                continue
            context = sum(len(r.prompt) + r.generated for r in batch)
            clock += cfg.step_seconds(len(batch), context)
            await _sleep_until(loop, clock)
            for req in batch:
                if not req.done:
                    self._emit(req, cfg.tokens_per_chunk)
            self._notify()


async def _sleep_until(loop: asyncio.AbstractEventLoop, deadline: float) -> None:
    """Sleep until the monotonic `deadline` of `loop`'s clock (at least yield once)."""
    await asyncio.sleep(max(0.0, deadline - loop.time()))
