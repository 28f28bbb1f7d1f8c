"""How many tokens per second one runner process can ingest with under 1 % timing error.

A paced SSE source in a child process (so it does not share the runner's core) streams
vLLM-shaped chunks, one token each with continuous usage, to N concurrent requests at a
known total rate. The runner's own client and figure code measure it; the error is the
relative difference between the measured and the true total tok/s (and per-request tok/s).
The rate doubles until the error passes 1 %. Then the matrix overhead benchmark runs.

With --live-view the runner's live matrix view redraws (to /dev/null, as on a terminal) during
every window, as `runner measure` does on a terminal, so its cost shows in the error and CPU.

Run: python3 benchmarks/client_ingest.py [--streams 64] [--window 4] [--repeats 3] [--live-view]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import multiprocessing
import os
import socket
import statistics
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import AsyncIterator, Iterator, Sequence

from rich.console import Console

from runner.bundle.schema import Bundle, DecodeCell, Engine
from runner.cell import decode_figures
from runner.client import Client, Trace
from runner.live_view import LiveView
from runner.options import DEFAULT_CONCURRENCY
from runner.plan import PlanSpec

SSE = (b'data: {"id":"cmpl-b","object":"text_completion","created":0,"model":"bench","choices":[{"index":0,'
       b'"text":" tok","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":1024,'
       b'"total_tokens":%d,"completion_tokens":%d}}\n\n')
TICK_S = 0.002


async def _serve_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rate: float) -> None:
    """Answer one request with an endless stream of one-token chunks at `rate` tok/s."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")), 0)
    await reader.readexactly(length)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    start, sent = time.perf_counter(), 0
    try:
        while True:
            due = int((time.perf_counter() - start) * rate) + 1
            if due > sent:
                writer.write(b"".join(SSE % (1024 + i, i) for i in range(sent + 1, due + 1)))
                sent = due
                await writer.drain()
            await asyncio.sleep(TICK_S)
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def _source(port: int, rate_per_stream: float) -> None:
    """Child process: serve paced streams on 127.0.0.1:`port` forever."""
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: _serve_stream(r, w, rate_per_stream), "127.0.0.1", port)
        await server.serve_forever()
    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def paced_source(rate_per_stream: float) -> Iterator[int]:
    """The paced source running in a child process for the block; its port."""
    port = _free_port()
    source = multiprocessing.Process(target=_source, args=(port, rate_per_stream), daemon=True)
    source.start()
    time.sleep(0.5)
    try:
        yield port
    finally:
        source.kill()
        source.join()


SETTLE_S = 1.0


@asynccontextmanager
async def _drawing(traces: Sequence[Trace]) -> AsyncIterator[None]:
    """The live view of a half-measured default matrix (7 contexts × 8 columns), redrawing while
    the runner's ticker feeds it the window's token count every 0.5 s, as in runner measure."""
    contexts = [8192 << i for i in range(7)]
    plan = PlanSpec(contexts=contexts, prefill_contexts=contexts, concurrency=list(DEFAULT_CONCURRENCY),
                    duration=30, max_output=4096)
    done = [DecodeCell(context_tokens=c, concurrency=n, status="Valid", total_tok_s=1234.5 * n, ttft_ms=40.0)
            for c in contexts[:3] for n in DEFAULT_CONCURRENCY]
    with open(os.devnull, "w") as sink:
        view = LiveView(console=Console(file=sink, force_terminal=True, width=80))
        view.run_started(plan, Bundle(id="bench", model="bench", engine=Engine(name="bench"), decode=done),
                         Path("bench.json"), len(done), len(contexts) * (len(DEFAULT_CONCURRENCY) + 1))
        view.cell_started(contexts[3], 64, len(done), 600.0)
        view.phase("measuring")

        async def tick() -> None:
            while True:
                await asyncio.sleep(0.5)
                view.live_tokens(sum(t.tokens for t in traces))

        ticker = asyncio.create_task(tick())
        try:
            yield
        finally:
            ticker.cancel()
            view.run_ended(interrupted=False)


async def _measure(port: int, streams: int, window: float, live_view: bool = False) -> tuple[float, float, float]:
    """Measured total tok/s, per-request tok/s and runner CPU seconds per wall second.

    Streams run SETTLE_S before the window opens, so connection set-up is not counted;
    the figures come from the runner's own timestamps via its figure code.
    """
    client = Client(f"http://127.0.0.1:{port}/v1", None, stall_timeout=10)
    traces = [Trace() for _ in range(streams)]
    body = {"model": "bench", "prompt": [1], "max_tokens": 10**9, "stream": True}
    tasks = [asyncio.create_task(client.stream(body, t, silence=None)) for t in traces]
    await asyncio.sleep(SETTLE_S)
    async with _drawing(traces) if live_view else _nothing():
        cpu0 = time.process_time()
        start = time.perf_counter()
        await asyncio.sleep(window)
        end = time.perf_counter()
        cpu = (time.process_time() - cpu0) / (end - start)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await client.aclose()
    figures = decode_figures([_clip(t, start) for t in traces], start, end)
    return figures.total_tok_s, figures.per_request_tok_s or 0.0, cpu


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


def _clip(trace: Trace, start: float) -> Trace:
    """The part of `trace` after `start`, as if the request had begun then."""
    first = bisect.bisect_right(trace.times, start)
    clipped = Trace()
    clipped.start, clipped.times, clipped.counts = start, trace.times[first:], trace.counts[first:]
    return clipped


def run_level(total_rate: float, streams: int, window: float, repeats: int, live_view: bool = False) -> dict:
    """Median errors at one total rate over `repeats` runs."""
    errors, per_errors, cpus = [], [], []
    for _ in range(repeats):
        with paced_source(total_rate / streams) as port:
            total, per_request, cpu = asyncio.run(_measure(port, streams, window, live_view))
        errors.append(abs(total / total_rate - 1))
        per_errors.append(abs(per_request / (total_rate / streams) - 1))
        cpus.append(cpu)
    return {"rate": total_rate, "total_err": statistics.median(errors), "per_err": statistics.median(per_errors),
            "cpu": statistics.median(cpus)}


def main() -> None:
    """Double the rate until the timing error passes 1 %; print medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--window", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--start-rate", type=float, default=5000)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--live-view", action="store_true", help="redraw the live matrix view during each window")
    args = parser.parse_args()
    print(f"client ingest: {args.streams} streams, {args.window:g} s windows, median of {args.repeats}; "
          f"{os.cpu_count()} CPUs on this machine, runner process is single-threaded"
          + ("; live view redrawing" if args.live_view else ""))
    print(f"{'true tok/s':>12} {'total err':>10} {'per-req err':>12} {'runner CPU':>11}")
    best, rate = 0.0, args.start_rate
    while True:
        level = run_level(rate, args.streams, args.window, args.repeats, args.live_view)
        print(f"{rate:>12,.0f} {level['total_err']:>9.2%} {level['per_err']:>11.2%} {level['cpu']:>10.0%}")
        if level["total_err"] >= 0.01 or level["per_err"] >= 0.01:
            break
        best, rate = rate, rate * 2
    print(f"highest rate ingested with timing error under 1 %: {best:,.0f} tok/s (target >= 20,000)")
    if not args.skip_overhead:
        from matrix_overhead import main as overhead
        overhead()


if __name__ == "__main__":
    main()
