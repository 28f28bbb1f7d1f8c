"""Read the simulator's token log back: the server's own record of each request, as Traces.

The log (SimConfig.token_log) has a JSON line per arrival (n = 0) and per emitted batch of
tokens, stamped with wall-clock seconds. Turned into runner.client.Trace objects, the same
code that computes the runner's figures computes the server's, for any window.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from runner.client import Trace


class _Line(msgspec.Struct):
    r: int
    t: float
    n: int


def read_token_log(path: Path) -> list[Trace]:
    """One Trace per request in the log: start = arrival, times and counts = its emissions."""
    traces: dict[int, Trace] = {}
    decoder = msgspec.json.Decoder(_Line)
    for raw in path.read_bytes().splitlines():
        line = decoder.decode(raw)
        if line.n == 0:
            trace = traces[line.r] = Trace()
            trace.start = line.t
        elif line.r in traces:
            trace = traces[line.r]
            trace.times.append(line.t)
            trace.counts.append(line.n)
            trace.tokens += line.n
    return list(traces.values())


def window_traces(traces: list[Trace], start: float, end: float) -> list[Trace]:
    """The requests that arrived during the window [start, end] (wall-clock seconds)."""
    return [t for t in traces if start <= t.start <= end]
