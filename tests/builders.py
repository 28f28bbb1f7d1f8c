"""What many tests build or check the same way: paths, bundles, traces, runs against the simulator,
folder digests and the HTTP helpers; beside it, tests/sample_site.py writes content folders and
tests/page_text.py reads pages' text. Pytest fixtures live in the conftest.py files; no test module
imports another, they import from these."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import hashlib
import http.server
import io
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

import msgspec

from runner.bundle.schema import (
    Bundle,
    DecodeCell,
    EndpointCheck,
    EnergyCheck,
    Engine,
    Hardware,
    PrefillPoint,
    RunInfo,
    ServerCheck,
    ServerLaunch,
    SpeculativeCheck,
    Topology,
    decode_bundle,
)
from runner.client import Trace
from runner.errors import MeasureError
from runner.journal import journal_path
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.simulator import SimConfig, running_simulator, start_simulator
from sitegen.build import build_site

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SEEDS = sorted((FIXTURES / "seeds").glob("*.txt"))

# Figures the hostile-input and real-engine tests report (inputs tried, strings rendered, start-up
# times); the root conftest prints them after the run.
FIGURES: list[str] = []

# Values that parse as numbers, paths, markup or nothing, for generated inputs.
NASTY_STRINGS = ["NaN", "Infinity", "-inf", "1e309", "", "null", "<script>", "\u2028\u2029", "../x", "\r\n", "\x00", "K", "8K"]


# --- Bundles -----------------------------------------------------------------------------------

CONTEXTS = (8192, 16384, 32768, 65536, 131072, 257024)
LEVELS = (1, 2, 4, 8, 16, 32, 64, 128)
HOSTILE = "</script><img src=x onerror=alert(1)>\u2028=cmd|' /C calc'!A0 & \u2029"
LAUNCH = (
    '"$HOME/env/bin/vllm" serve org/Model --served-model-name ling --trust-remote-code '
    "--tensor-parallel-size 2 --max-model-len 262144 --api-key <redacted>"
)


def cell_status(context: int, concurrency: int) -> str:
    """A seed-like pattern: long contexts at high concurrency over capacity, one loop, one queue, one failure."""
    if context * concurrency > 131072 * 64:
        return "Over capacity"
    return {(16384, 16): "Looped", (8192, 128): "Requests queued", (32768, 4): "Failed"}.get(
        (context, concurrency), "Valid"
    )


def decode_cell(context: int, concurrency: int, scale: float) -> DecodeCell:
    """One decode cell with numbers that fall with context and rise with concurrency."""
    status = cell_status(context, concurrency)
    if status in ("Over capacity", "Looped", "Failed"):
        error = "HTTP 500: boom" if status == "Failed" else None
        return DecodeCell(context_tokens=context, concurrency=concurrency, status=status, error=error)
    per_request = scale * 170.0 / (1 + concurrency / 40) / (1 + context / 1_000_000)
    return DecodeCell(
        context_tokens=context, concurrency=concurrency, status=status,
        total_tok_s=round(per_request * concurrency * 0.98, 3), per_request_tok_s=round(per_request, 3),
        ttft_ms=40.5 + concurrency * 6.25, tbt_ms=round(1000 / per_request, 3), avg_active=float(concurrency),
        completed=concurrency // 2, output_tokens=int(per_request * concurrency * 30), measured_s=30.0,
    )


def prefill_point(context: int, scale: float) -> PrefillPoint:
    """A prefill point whose TTFT is its prompt over its prompt tok/s, as a measured one's is."""
    rate = scale * 26_000.0 - context / 100
    return PrefillPoint(context_tokens=context, status="Valid", prompt_tok_s=rate, ttft_ms=context * 1000 / rate)


def make_bundle(
    run_id: str = "ling-h200",
    model: str = "Ling-3.0-flash-fp4",
    gpu: str | None = "H200 NVL",
    gpu_count: int | None = 2,
    version: str | None = "0.27.2",
    measured_at: dt.datetime | None = dt.datetime(2026, 9, 3, 14, 23, tzinfo=dt.timezone.utc),
    scale: float = 1.0,
    launch_command: str | None = LAUNCH,
) -> Bundle:
    """A seed-shaped bundle: 6 contexts × 8 concurrencies and 7 prefill points."""
    prefill = [prefill_point(c, scale) for c in (*CONTEXTS, 262144)]
    return Bundle(
        id=run_id, model=model, measured_at=measured_at, submitter="@keennaylmx", origin="dev import",
        hardware=Hardware(type="Discrete GPU", gpu=gpu, gpu_count=gpu_count, vram_per_gpu_gb=141, os="linux"),
        engine=Engine(name="vllm", version=version, quantization="MXFP4+FP8", backend="cuda"),
        run=RunInfo(served_model="ling", seconds_per_measurement=30, max_output_tokens=8192, prefill_mode="Measured during decode warm-up"),
        launch_command=launch_command,
        prefill=prefill,
        decode=[decode_cell(c, n, scale) for c in CONTEXTS for n in LEVELS],
    )


SERVED_CONTEXTS = (8192, 32768)
SERVED_LEVELS = (1, 4, 16, 64)
# The served bundle's cells that show its rarer readings: an invalid energy reading, a metrics endpoint that missed scrapes.
INVALID_ENERGY_CELL = (32768, 64)
MISSED_SCRAPES_CELL = (8192, 16)
KV_TRANSFER_MS = 12.5  # what moving a prompt's KV cache from the prefill to the decode GPUs adds to TTFT
DISAGGREGATED_LAUNCH = (
    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 4 --data-parallel-size 2 --enable-expert-parallel "
    "--speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": 3}' --kv-transfer-config '{\"kv_role\": \"kv_consumer\"}'"
)


def served_cell(cell: DecodeCell, speculative: bool = True, energy: bool = True) -> DecodeCell:
    """A decode cell with what a runner-launched disaggregated server records: speculative decoding from the
    server's counters, a TTFT that includes the KV cache's transfer, an energy reading over 8 GPUs (invalid at INVALID_ENERGY_CELL), and at
    MISSED_SCRAPES_CELL a second metrics endpoint that missed scrapes, which made the cell Distorted."""
    key = (cell.context_tokens, cell.concurrency)
    if cell.total_tok_s is None:
        return cell
    cell.ttft_ms += KV_TRANSFER_MS
    drafts = cell.concurrency * 900
    accepted = int(drafts * (2.1 - cell.concurrency / 100))
    if speculative:
        cell.speculative = SpeculativeCheck(
            source="server counters", drafts=drafts, draft_tokens=drafts * 3, accepted_tokens=accepted,
            acceptance_rate=accepted / (drafts * 3), mean_acceptance_length=1 + accepted / drafts,
            per_position=[0.86 - 0.004 * cell.concurrency, 0.7 - 0.004 * cell.concurrency, 0.54 - 0.002 * cell.concurrency],
        )
    watts = 300.0 + 5.5 * cell.concurrency
    if energy and key == INVALID_ENERGY_CELL:
        cell.energy = EnergyCheck(source="nvml", valid=False, invalid_reason="a gap of 4.2 s in the power samples", gpus=8,
                                  seconds=30.0, power_samples=240, max_sample_gap_s=4.2)
    elif energy:
        joules = watts * 8 * 30.0
        cell.energy = EnergyCheck(source="nvml", valid=True, gpus=8, seconds=30.0, joules=joules,
                                  joules_per_output_token=joules / cell.output_tokens,
                                  joules_per_token=joules / (cell.output_tokens + cell.context_tokens * cell.concurrency),
                                  mean_watts_per_gpu=watts, power_samples=300, max_sample_gap_s=0.2)
    if key == MISSED_SCRAPES_CELL:
        cell.status = "Distorted"
        cell.distortion = "the server's figures rest on one endpoint: http://10.0.0.3:8000/metrics did not answer 3 of 40 scrapes"
        cell.server = ServerCheck(metrics="vllm", scrapes=40, endpoints=[
            EndpointCheck(url="http://10.0.0.2:8000/metrics", scrapes=40, scrape_max_ms=38.0),
            EndpointCheck(url="http://10.0.0.3:8000/metrics", scrapes=40, failed=3, scrape_max_ms=2012.0),
        ])
    return cell


def make_served_bundle(run_id: str = "qwen3-32b-disaggregated", speculative: bool = True, energy: bool = True, **changes: object) -> Bundle:
    """A runner-launched, disaggregated deployment (4 prefill and 8 decode GPUs on 2 nodes, through the chat
    API, speculative decoding with EAGLE-3) over a 2 × 4 matrix: every new fact of the bundle, for the pages
    that show them. `speculative`/`energy`: whether its cells have those readings; `changes` go to make_bundle."""
    settings = dict(model="Qwen3-32B", gpu="H200 SXM", gpu_count=12, launch_command=DISAGGREGATED_LAUNCH) | changes
    bundle = make_bundle(run_id, **settings)
    bundle.hardware.vram_per_gpu_gb = 141
    bundle.prefill = [p for p in bundle.prefill if p.context_tokens in SERVED_CONTEXTS]
    bundle.decode = [served_cell(c, speculative, energy) for c in bundle.decode
                     if c.context_tokens in SERVED_CONTEXTS and c.concurrency in SERVED_LEVELS]
    bundle.run.api = "chat"
    bundle.engine.speculative_method, bundle.engine.speculative_tokens = "eagle3", 3
    bundle.topology = Topology(nodes=2, tensor_parallel=4, data_parallel=2, expert_parallel=8, prefill_gpus=4, decode_gpus=8)
    bundle.launch = ServerLaunch(ready_s=84.25, ended="stopped by the runner (SIGTERM)", log="qwen3-32b-disaggregated.server.log",
                                 scheduler="slurm", job_id="4242", node="gpu-07")
    return bundle


def read_bundle(path: Path) -> Bundle:
    """The bundle the runner wrote to `path`."""
    return decode_bundle(path.read_bytes())


# --- The runner's requests and runs --------------------------------------------------------------

def make_trace(start: float, times: list[float], counts: list[int] | None = None, end: float | None = None) -> Trace:
    """A request's trace as the client records it: tokens `counts` (1 each unless given) arriving at `times`."""
    trace = Trace()
    trace.start, trace.times, trace.counts = start, times, counts or [1] * len(times)
    trace.tokens = sum(trace.counts)
    trace.finished, trace.end = end is not None, end
    return trace


def measure_simulator(config: SimConfig, out: Path, **options: object) -> Bundle:
    """Measure a fresh simulator with `options` and return the bundle written to `out`."""
    with running_simulator(config) as server:
        opts = Options(base_url=server.base_url, out=out, **options)
        asyncio.run(measure(opts, progress=Progress(0, io.StringIO())))
    return read_bundle(out)


# A quick simulator for runs that inject faults, and the secret their launch command carries.
FAULT_SIM = SimConfig(max_model_len=4096, base_step_ms=4, per_seq_ms=0, per_ktoken_ms=0)
FAULT_SECRET = "sk-fault-test-0123456789abcdef"
FAULT_KEY_ENV = "SPEED_MATRIX_TEST_KEY"


def fault_options(base_url: str, out: Path, **changes: object) -> Options:
    """A small, quick matrix: one context, three concurrency levels, 1 s windows."""
    settings = dict(base_url=base_url, out=out, contexts=[1024], prefill_contexts=[1024], concurrency=[1, 2, 3],
                    duration=1.0, max_output=256, stall_timeout=1.0, ready_timeout=1.0,
                    api_key_env=FAULT_KEY_ENV, launch_command=f"vllm serve m --api-key {FAULT_SECRET}")
    settings.update(changes)
    return Options(**settings)


def journal_decode_lines(out: Path) -> list[tuple[int, int, str]]:
    """(context, concurrency, status) of every decode line in the journal beside `out`."""
    lines = []
    for raw in journal_path(out).read_bytes().splitlines():
        entry = json.loads(raw)
        if entry["kind"] == "decode":
            lines.append((entry["cell"]["context_tokens"], entry["cell"]["concurrency"], entry["cell"]["status"]))
    return lines


async def measure_with_faults(config: SimConfig, out: Path, faults: dict | None = None, after_cells: int = 1,
                              log: io.StringIO | None = None, **changes: object) -> str | None:
    """Measure a fresh simulator, arming `faults` once `after_cells` decode cells are journaled.

    Returns the one-line stop message, or None when the matrix ran to its end.
    """
    server = await start_simulator(config)
    task = asyncio.create_task(measure(fault_options(server.base_url, out, resume=journal_path(out).exists(), **changes),
                                       progress=Progress(0, log or io.StringIO())))
    try:
        if faults:
            while not task.done() and not (journal_path(out).exists() and len(journal_decode_lines(out)) >= after_cells):
                await asyncio.sleep(0.02)
            server.set_faults(**faults)
        try:
            await task
        except MeasureError as exc:
            return str(exc)
        return None
    finally:
        await server.close()


# --- Folders ---------------------------------------------------------------------------------------

def tree_digest(folder: Path) -> dict[str, str]:
    """Every file below `folder` by relative path, with its SHA-256: equal digests, byte-identical trees
    (the build manifest's inodes aside, which differ between any two builds)."""
    return {str(p.relative_to(folder)): hashlib.sha256(_without_inodes(p)).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def built_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the committed content/ under tmp_path, and a site built from it (tmp_path/site)."""
    content = tmp_path / "content"
    shutil.copytree(ROOT / "content", content)
    out = tmp_path / "site"
    build_site(content, out)
    return content, out


def same_as_fresh(content: Path, out: Path) -> bool:
    """Whether the site in `out` is the one a build from nothing makes of `content` (built beside it)."""
    fresh = out.parent / "fresh"
    build_site(content, fresh)
    return tree_digest(out) == tree_digest(fresh)


def script_call(script: str, function: str) -> list:
    """The arguments of the one `window.FUNCTION(...);` call a data script of the site makes."""
    prefix = f"window.{function}("
    assert script.startswith(prefix) and script.endswith(");\n"), script[:80]
    return json.loads("[" + script.removeprefix(prefix).removesuffix(");\n") + "]")


def site_order(site: Path, name: str) -> tuple[list[int], list[dict]]:
    """A listing order the build wrote ("peak-descending"): every run's position in the data chunks,
    and the order's first screen of records (its two scripts, the first naming the other)."""
    order, first, positions_path = script_call((site / "data" / f"sort-{name}.js").read_text(), "speedMatrixFirstScreen")
    again, positions = script_call((site / positions_path).read_text(), "speedMatrixPositions")
    assert order == again == name
    return positions, first


def _without_inodes(path: Path) -> bytes:
    """A file's bytes; for a build manifest, its outputs' keys and files without the files' inodes
    (and nothing of the stamp, which is only the manifest's own inode and change time)."""
    if path.name == ".build-stamp":
        return b""
    if path.name != ".build-manifest":
        return path.read_bytes()
    version, outputs = msgspec.msgpack.decode(path.read_bytes())
    return msgspec.msgpack.encode([version, {output: entry[:2] for output, entry in outputs.items()}])


# --- HTTP --------------------------------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve_folder(folder: Path) -> Iterator[str]:
    """Serve a folder over real HTTP on 127.0.0.1 until the generator is closed."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def block_offsite(page, base: str) -> list[str]:
    """Abort and record every request a Playwright `page` makes to a host other than `base`'s."""
    outside: list[str] = []
    site_host = urlparse(base).netloc

    def route(r) -> None:
        if urlparse(r.request.url).netloc != site_host:
            outside.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    page.route("**/*", route)
    return outside


# --- Checking bundles (`sitegen check`) --------------------------------------------------------------

class Checked(msgspec.Struct):
    """What `sitegen check` said: its exit status, its error lines (stderr) and its verdict lines (stdout)."""

    exit_code: int
    errors: list[str]
    verdicts: list[str]


def sitegen_check(*args: str | Path) -> Checked:
    """Run `sitegen check ARGS…` in this process."""
    from click.testing import CliRunner

    from sitegen.cli import main

    result = CliRunner().invoke(main, ["check", *map(str, args)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Checked(result.exit_code, result.stderr.splitlines(), result.stdout.splitlines())


def edit_json(path: Path, change: Callable[[dict], object]) -> Path:
    """Change a bundle file's JSON in place, as a hand edit would (`change` gets the parsed object); returns `path`."""
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def check_errors_at(path: Path, where: str | None) -> list[str]:
    """The error lines `sitegen check PATH` prints for `path` at the field `where` (None: the file as a whole),
    after asserting that it exits 1 and finds the bundle inconsistent."""
    checked = sitegen_check(path)
    assert checked.exit_code == 1, checked
    assert checked.verdicts[0].startswith(f"{path}: inconsistent"), checked
    start = f"error: {path}:{where}: " if where else f"error: {path}: "
    return [line for line in checked.errors if line.startswith(start)]


def make_signing_key(folder: Path, principal: str) -> tuple[Path, Path]:
    """An ed25519 key pair in `folder` and an allowed_signers file there naming `principal` for it."""
    import subprocess

    key = folder / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", principal, "-f", str(key)], check=True)
    allowed = folder / "allowed_signers"
    allowed.write_text(f"{principal} {key.with_suffix('.pub').read_text().strip()}\n")
    return key, allowed
