"""The runner's figures against the simulator's token log, cell by cell (see benchmarks/accuracy.py).

Shared by the on-demand benchmark and the quiet-machine test: start the simulator in its own
process, as a real server runs, logging every token; measure a matrix; recompute each cell's
figures from the log over the same window; report the errors.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from runner.bundle.schema import Bundle, DecodeCell, decode_bundle
from runner.cell import decode_figures
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.simulator import SimConfig
from runner.simulator.tokenlog import read_token_log, window_traces

ROOT = Path(__file__).resolve().parent.parent
# As the real-vLLM test: four sequences at most, a 16,384-token KV cache.
CONFIG = SimConfig(max_model_len=8192, kv_capacity_tokens=16384, max_num_seqs=4, prefill_tok_s=20_000,
                   base_step_ms=10, per_seq_ms=0.5, per_ktoken_ms=0.05)
CONTEXTS = [1024, 2048]
CONCURRENCY = [1, 2, 4, 8]
MAX_OUTPUT = 256
# On a busy machine the simulator can take many seconds to close after Ctrl-C: room to spare.
STOP_S = 60


class CellError(msgspec.Struct, kw_only=True):
    """One cell's figures from the runner and from the log, and how far apart they are."""

    context: int
    concurrency: int
    status: str
    attempts: int
    per_request_err: float | None
    total_err: float | None
    tbt_err: float | None
    ttft_err_ms: float | None

    @property
    def decode_err(self) -> float:
        """The largest relative error of the decode figures."""
        return max(abs(e) for e in (self.per_request_err, self.total_err, self.tbt_err) if e is not None)


def _rel(client: float | None, log: float | None) -> float | None:
    return None if client is None or not log else client / log - 1


def cell_error(cell: DecodeCell, traces: list) -> CellError:
    """The cell's figures against the log's over the cell's window."""
    start = cell.window_started_at.timestamp()
    end = start + cell.measured_s
    log = decode_figures(window_traces(traces, start, end), start, end)
    return CellError(
        context=cell.context_tokens, concurrency=cell.concurrency, status=cell.status,
        attempts=cell.client.attempts if cell.client else 1,
        per_request_err=_rel(cell.per_request_tok_s, log.per_request_tok_s),
        total_err=_rel(cell.total_tok_s, log.total_tok_s), tbt_err=_rel(cell.tbt_ms, log.tbt_ms),
        ttft_err_ms=None if cell.ttft_ms is None or log.ttft_ms is None else cell.ttft_ms - log.ttft_ms,
    )


def run_matrix(folder: Path, duration: float, config: SimConfig = CONFIG, contexts: list[int] = CONTEXTS,
               concurrency: list[int] = CONCURRENCY) -> tuple[Bundle, list[CellError]]:
    """Serve the simulator in its own process, measure the matrix, and compare every measured cell."""
    log_path = folder / "tokens.jsonl"
    settings = folder / "sim.json"
    settings.write_bytes(msgspec.json.encode(msgspec.structs.replace(config, token_log=str(log_path))))
    server = subprocess.Popen([sys.executable, "-m", "runner", "simulate", "--serve-only", "--sim-config",
                               str(settings), "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        announced = server.stdout.readline()  # "Simulating MODEL at http://127.0.0.1:PORT/v1 (Ctrl-C stops)"
        match = re.search(r"(http://\S+/v1)", announced)
        if match is None:
            raise RuntimeError(f"the simulator did not start: {announced!r}")
        base = match.group(1)
        out = folder / "run.json"
        options = Options(base_url=base, out=out, contexts=contexts, prefill_contexts=contexts[:1],
                          concurrency=concurrency, duration=duration, max_output=MAX_OUTPUT)
        asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C: the simulator closes its log and stops
        asked = time.monotonic()
        try:
            server.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:  # the log is written a line at a time: nothing is lost
            server.kill()
            server.wait()
        print(f"the simulator stopped {time.monotonic() - asked:.1f} s after Ctrl-C", file=sys.stderr)
    bundle = decode_bundle(out.read_bytes())
    traces = read_token_log(log_path)
    errors = [cell_error(c, traces) for c in bundle.decode if c.total_tok_s is not None]
    return bundle, errors


def expected_status(context: int, concurrency: int, config: SimConfig = CONFIG) -> str:
    """What the simulator's settings make of a cell."""
    if concurrency * (context + MAX_OUTPUT) > config.kv_capacity_tokens:
        return "Over capacity"
    return "Requests queued" if concurrency > config.max_num_seqs else "Valid"


def table(errors: list[CellError]) -> str:
    """The errors as a plain table."""
    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:+.3%}"
    lines = [f"{'cell':>8} {'status':<16} {'tries':>5} {'per req':>9} {'total':>9} {'TBT':>9} {'TTFT ms':>8}"]
    for e in errors:
        ttft = "—" if e.ttft_err_ms is None else f"{e.ttft_err_ms:+.2f}"
        lines.append(f"{e.context // 1024}K × {e.concurrency:<3} {e.status:<16} {e.attempts:>5} "
                     f"{pct(e.per_request_err):>9} {pct(e.total_err):>9} {pct(e.tbt_err):>9} {ttft:>8}")
    return "\n".join(lines)
