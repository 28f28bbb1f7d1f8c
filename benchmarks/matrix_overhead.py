"""Matrix overhead: wall time of `runner measure` beyond the sum of its measurement windows.

Measures a small matrix against the simulator at short windows, where overhead is easiest
to see, and extrapolates to 30 s windows. The per-cell overhead (prompt building, warm-up
of the cell's prompts, starting and stopping streams, journal and bundle writes) does not
grow with the window, so overhead at 30 s = per-cell overhead / 30 s; the table shows it
is indeed flat across the windows measured. Prefill time is server time and is counted
as overhead here, which makes the figure pessimistic.

Run: python3 benchmarks/matrix_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import tempfile
import time
from pathlib import Path

from runner.bundle.schema import decode_bundle
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.simulator import SimConfig, running_simulator

CONFIG = SimConfig(max_model_len=32768, kv_capacity_tokens=1 << 20, prefill_tok_s=200_000, base_step_ms=10,
                   per_seq_ms=0.2)
CONTEXTS = [4096, 16384]
CONCURRENCY = [1, 4, 16, 32]


def one_run(window: float) -> tuple[float, float, int]:
    """Wall seconds, summed window seconds and measured cells of one matrix run."""
    with tempfile.TemporaryDirectory() as folder, running_simulator(CONFIG) as server:
        out = Path(folder) / "run.json"
        options = Options(base_url=server.base_url, out=out, contexts=CONTEXTS, prefill_contexts=CONTEXTS,
                          concurrency=CONCURRENCY, duration=window, max_output=1024)
        began = time.perf_counter()
        asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
        wall = time.perf_counter() - began
        cells = [c for c in decode_bundle(out.read_bytes()).decode if c.measured_s]
    return wall, sum(c.measured_s for c in cells), len(cells)


def main() -> None:
    """Print median overhead per cell and as a fraction of the window, then the extrapolation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="1,3")
    parser.add_argument("--repeats", type=int, default=3)
    args, _ = parser.parse_known_args()
    print(f"\nmatrix overhead: simulator, {len(CONTEXTS)} contexts × {len(CONCURRENCY)} concurrency levels, "
          f"median of {args.repeats}")
    print(f"{'window':>8} {'wall s':>8} {'windows s':>10} {'overhead/cell':>14} {'overhead':>9}")
    per_cell = []
    for window in [float(w) for w in args.windows.split(",")]:
        runs = [one_run(window) for _ in range(args.repeats)]
        wall = statistics.median(r[0] for r in runs)
        windows = statistics.median(r[1] for r in runs)
        overhead = statistics.median((r[0] - r[1]) / r[2] for r in runs)
        per_cell.append(overhead)
        print(f"{window:>7g}s {wall:>8.1f} {windows:>10.1f} {overhead:>13.2f}s {overhead / window:>8.1%}")
    worst = max(per_cell)
    print(f"extrapolated to 30 s windows: {worst:.2f} s per cell / 30 s = {worst / 30:.1%} overhead "
          "(target < 10 %; the largest per-cell overhead measured is used)")


if __name__ == "__main__":
    main()
