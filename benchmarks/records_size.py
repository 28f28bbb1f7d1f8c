"""Raw request records: the size of a seed-sized matrix's `<id>.requests.jsonl.gz`.

8 contexts × 8 concurrency levels (1 to 128), 30 s windows, requests of 4,096 tokens at most,
token gaps jittered ±10 %. Two servers: 150 tok/s in all per window (the judged case), and 150 tok/s
per request at every concurrency (each window up to 128 × 150 tok/s, the worst case).
Target: at most 2 MB for the first.

Run: python3 benchmarks/records_size.py
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner.bundle.records import RequestRecord, WindowRecord, append_window  # noqa: E402

CONTEXTS = [8192 * 2**k for k in range(8)]
CONCURRENCY = [2**k for k in range(8)]
WINDOW_US = 30_000_000
MAX_OUTPUT = 4096


def window(chance: random.Random, concurrency: int, request_tok_s: float) -> list[RequestRecord]:
    """The requests of one window: each slot streams requests back to back at `request_tok_s`."""
    records = []
    gap = 1_000_000 / request_tok_s
    for _ in range(concurrency):
        moment = 0
        while moment < WINDOW_US:
            start, arrivals, now = moment, [], moment + int(gap * 3)
            while len(arrivals) < MAX_OUTPUT and now <= WINDOW_US:
                arrivals.append(now)
                now += int(gap * chance.uniform(0.9, 1.1))
            done = len(arrivals) == MAX_OUTPUT
            records.append(RequestRecord(start_us=start, gaps_us=[b - a for a, b in zip([0, *arrivals], arrivals)],
                                         counts=[1] * len(arrivals), tokens=len(arrivals),
                                         end_us=arrivals[-1] if done else None, finish_reason="length" if done else None,
                                         status="finished" if done else "cut"))
            moment = now
    return records


def size(total_tok_s: float | None) -> int:
    """Bytes of the records file for the matrix, at 150 tok/s in all (None: 150 tok/s per request)."""
    chance = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.requests.jsonl.gz"
        for context in CONTEXTS:
            for concurrency in CONCURRENCY:
                rate = total_tok_s / concurrency if total_tok_s else 150.0
                append_window(path, WindowRecord(context=context, concurrency=concurrency, window_us=WINDOW_US),
                              window(chance, concurrency, rate))
        return path.stat().st_size


def main() -> None:
    """Print both sizes."""
    print(f"150 tok/s in all per window: {size(150.0) / 1e6:.2f} MB (target ≤ 2 MB)")
    print(f"150 tok/s per request at every concurrency: {size(None) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
