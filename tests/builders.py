"""What many tests build or check the same way: paths, bundles, traces, runs against the simulator,
page text, folder digests and the HTTP helpers. Pytest fixtures live in the conftest.py files; no
test module imports another, they import from here."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import hashlib
import http.server
import io
import json
import re
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import msgspec
import pytest

from runner.bundle.schema import (
    Bundle,
    DecodeCell,
    Engine,
    Hardware,
    PrefillPoint,
    RunInfo,
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
    prefill = [
        PrefillPoint(context_tokens=c, status="Valid", prompt_tok_s=scale * 26_000.0 - c / 100, ttft_ms=c / 26.0)
        for c in (*CONTEXTS, 262144)
    ]
    return Bundle(
        id=run_id, model=model, measured_at=measured_at, submitter="@keennaylmx", origin="dev import",
        hardware=Hardware(type="Discrete GPU", gpu=gpu, gpu_count=gpu_count, vram_per_gpu_gb=141, os="linux"),
        engine=Engine(name="vllm", version=version, quantization="MXFP4+FP8", backend="cuda"),
        run=RunInfo(served_model="ling", seconds_per_measurement=30, max_output_tokens=4096),
        launch_command=launch_command,
        prefill=prefill,
        decode=[decode_cell(c, n, scale) for c in CONTEXTS for n in LEVELS],
    )


def build_large_site(folder: Path, count: int, model: Callable[[int], str], speedup: Callable[[int], float],
                     gpu: Callable[[int], str] | None = None, sizes: Sequence[tuple[object, str, int]] = ()) -> Path:
    """Build content/ and `count` synthesized runs into folder/site, with listing sizes (module, name, value) made small.

    Run i copies the committed bundles in turn with its own id, model(i), date and gpu(i) where
    given, and measures speedup(i) times their total tok/s.
    """
    content = folder / "content"
    shutil.copytree(ROOT / "content", content)
    bases = [json.loads(p.read_text()) for p in sorted((content / "runs").glob("*.json"))]
    for i in range(count):
        bundle = json.loads(json.dumps(bases[i % len(bases)]))
        bundle.update(id=f"run-{i:02d}", model=model(i), measured_at=f"2026-08-{i + 1:02d}T10:00:00Z")
        if gpu is not None:
            bundle["hardware"]["gpu"] = gpu(i)
        for cell in bundle["decode"]:
            if cell.get("total_tok_s") is not None:
                cell["total_tok_s"] = round(cell["total_tok_s"] * speedup(i), 1)
        (content / "runs" / f"run-{i:02d}.json").write_text(json.dumps(bundle))
    out = folder / "site"
    with pytest.MonkeyPatch.context() as patch:
        for module, name, value in sizes:
            patch.setattr(module, name, value)
        build_site(content, out)
    return out


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


# --- Pages and folders -------------------------------------------------------------------------

def normalize_page_text(text: str) -> str:
    """Page text for comparison: no whitespace, no markdown list or table punctuation, no label colons."""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"^\|?\s*:?-{3,}", stripped):
            continue
        kept.append(re.sub(r"^[-*]\s+", "", stripped))
    return re.sub(r"[\s|:]+", "", "".join(kept))


class MatrixText(HTMLParser):
    """Collects the text inside the element with id="matrix"."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth or ("id", "matrix") in attrs:
            self.depth += tag not in ("br", "img", "input", "meta", "link")

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


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
