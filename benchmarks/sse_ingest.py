"""SSE ingest both ways: the client's CPU per streamed event with httpx-sse (the runner's parser) and by hand.

The paced source of client_ingest.py (a child process, so it does not share the runner's core)
streams vLLM-shaped one-token chunks to N concurrent requests. The runner's Client reads them
with its own event reading (httpx-sse), and in the same run with a hand parser (the bytes split
on newlines, each `data:` line decoded: what the runner did before httpx-sse), both feeding the
same token accounting. Two loads: "paced", a decode window's rate where most reads carry one
event, and "flood", a rate no client keeps up with, where reads carry many events and the
figure is what one core can ingest. The parsers take turns; figures are medians of --repeats.

Run: python3 benchmarks/sse_ingest.py [--streams 64] [--window 3] [--repeats 5] [--paced-rate 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import httpx
import msgspec
from client_ingest import _clip, paced_source

from runner.cell import decode_figures
from runner.client import Client, Trace
from runner.client.trace import chunk_decoder, take_chunk
from runner.client.wire import MAX_LINE_BYTES
from runner.errors import RequestFailed

SETTLE_S = 1.0
FLOOD_RATE = 10_000_000.0


class HandParsed(Client):
    """The runner's client with the hand parser in place of httpx-sse: the peer measured beside it."""

    async def _read_events(self, response: httpx.Response, trace: Trace, expect_model: str | None,
                           limit: float | None, max_tokens: int | None) -> None:
        pending = b""
        async for data in response.aiter_bytes():
            now = time.perf_counter()
            pending += data
            lines = pending.split(b"\n") if b"\n" in data else [pending]
            pending = lines.pop()
            if len(pending) > MAX_LINE_BYTES:
                raise RequestFailed("line too long")
            for line in lines:
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    trace.finished = True
                    return
                take_chunk(chunk_decoder.decode(payload), trace, now, expect_model)
            if limit is not None and now - trace.last_seen > limit:
                raise RequestFailed("stalled")


async def _window(client_class: type[Client], port: int, streams: int, window: float) -> tuple[float, int, float]:
    """Client CPU seconds, events ingested and total tok/s as the runner measures it, over one window
    after SETTLE_S of streaming."""
    client = client_class(f"http://127.0.0.1:{port}/v1", None, stall_timeout=10)
    traces = [Trace() for _ in range(streams)]
    body = {"model": "bench", "prompt": [1], "max_tokens": 10**9, "stream": True}
    tasks = [asyncio.create_task(client.stream(body, t, silence=None)) for t in traces]
    await asyncio.sleep(SETTLE_S)
    events, cpu, start = sum(t.tokens for t in traces), time.process_time(), time.perf_counter()
    await asyncio.sleep(window)
    cpu, events, end = time.process_time() - cpu, sum(t.tokens for t in traces) - events, time.perf_counter()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await client.aclose()
    return cpu, events, decode_figures([_clip(t, start) for t in traces], start, end).total_tok_s


def run(client_class: type[Client], total_rate: float, streams: int, window: float) -> tuple[float, float, float]:
    """(client CPU µs per event, events per second, timing error of the total tok/s) of one window at `total_rate` tok/s."""
    with paced_source(total_rate / streams) as port:
        cpu, events, measured = asyncio.run(_window(client_class, port, streams, window))
    return cpu / max(events, 1) * 1e6, events / window, abs(measured / total_rate - 1)


def main() -> None:
    """Print each load's medians for both parsers and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--window", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--paced-rate", type=float, default=20_000.0, help="total tok/s of the paced load")
    args = parser.parse_args()
    print(f"SSE ingest: {args.streams} streams, {args.window:g} s windows, median of {args.repeats}; "
          f"{os.cpu_count()} CPUs on this machine, msgspec {msgspec.__version__}")
    print(f"{'load':<8} {'parser':<10} {'CPU µs/event':>13} {'events/s':>10} {'tok/s error':>12}")
    for load, rate in (("paced", args.paced_rate), ("flood", FLOOD_RATE)):
        found: dict[str, list[tuple[float, float, float]]] = {"httpx-sse": [], "hand": []}
        for _ in range(args.repeats):
            found["httpx-sse"].append(run(Client, rate, args.streams, args.window))
            found["hand"].append(run(HandParsed, rate, args.streams, args.window))
        medians = {name: [statistics.median(figure) for figure in zip(*runs)] for name, runs in found.items()}
        for name, (cost, rate_seen, error) in medians.items():
            shown = f"{error:.2%}" if load == "paced" else "—"  # a flood is not ingested in time by design
            print(f"{load:<8} {name:<10} {cost:>13.1f} {rate_seen:>10,.0f} {shown:>12}")
        print(f"{load:<8} httpx-sse costs {medians['httpx-sse'][0] / medians['hand'][0]:.2f}× the hand parser's CPU "
              f"per event, ingests {medians['httpx-sse'][1] / medians['hand'][1]:.2f}× its events/s")


if __name__ == "__main__":
    main()
