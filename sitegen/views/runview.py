"""What a run page says, as display strings: one view shared by HTML, text and the importer.

The HTML template, the plain-text rendition and the page importer's cross-checks
all read this view, so the three can never disagree about a number's format.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import msgspec
from markupsafe import Markup

from runner.bundle import formats as f
from runner.bundle.display import (
    DISTORTED,
    LEGEND,
    has_value,
    prefill_value,
    shows_figures,
    ttft_note,
)
from runner.bundle.schema import Bundle, ClientMachine, DecodeCell, PrefillPoint


class Field(msgspec.Struct, frozen=True):
    """One label/value pair of the Hardware, Engine or Run section."""

    label: str
    value: str


class Section(msgspec.Struct, frozen=True):
    """One of the Hardware, Engine and Run sections: a heading and its known fields."""

    heading: str
    fields: list[Field]


class PrefillItem(msgspec.Struct, frozen=True):
    """One item of the prefill list: "8K context", "26.5K", "310 ms TTFT" (or a status word)."""

    label: str
    value: str
    ttft: str
    status: str
    error: str | None


class MatrixCell(msgspec.Struct, frozen=True):
    """One decode matrix cell; `heat` in 0..1 shades it relative to the best cell."""

    context: str
    concurrency: int
    status: str
    value: str
    note: str
    ttft: str
    heat: float | None
    error: str | None

    @property
    def text(self) -> str:
        """The cell's visible text: value, the status word where one shows, TTFT."""
        return self.value + self.note + self.ttft


class MatrixRow(msgspec.Struct, frozen=True):
    """One context length of the decode matrix, a cell per concurrency level."""

    label: str
    cells: list[MatrixCell]


class RunView(msgspec.Struct, frozen=True):
    """Every string a run page's #matrix element shows, in page order."""

    title: str
    summary_engine: str
    summary_shape: str
    byline: str | None
    measured: str | None
    sections: list[Section]
    launch_command: str | None
    prefill: list[PrefillItem]
    concurrencies: list[int]
    matrix: list[MatrixRow]
    legend: list[str]
    ttft_note: str
    table: list[list[str]]
    errors: list[str]
    distortions: list[str] = []
    machine: list[Field] = []


# Directional formatting characters: embeddings, overrides (U+202A-U+202E) and isolates (U+2066-U+2069).
_ISOLATES, _PDI = "\u2066\u2067\u2068", "\u2069"
_DIRECTIONAL = re.compile("[\u202a-\u202e\u2066-\u2069]")
# What can reorder the text around it: the blocks of right-to-left scripts (Hebrew to Arabic, their
# presentation forms, and the astral ones), the right-to-left mark and the directional formatting
# characters. The same class is runs.js's: the rows it draws are isolated as the build's are.
_REORDERING = re.compile("[\u0590-\u08ff\u200f\u202a-\u202e\u2066-\u2069\ufb1d-\ufdff\ufe70-\ufeff"
                         "\U00010800-\U00010fff\U0001e800-\U0001efff]")


def isolated(text: str) -> str:
    """Text from a bundle for HTML: escaped in a <bdi> when it holds what can reorder the text around it,
    else as it is (autoescaping escapes it as any other string, and such a page stays byte for byte
    what it was)."""
    return Markup("<bdi>%s</bdi>") % text if _REORDERING.search(text) else text


def fenced(text: str) -> str:
    """Text from a bundle for a line composed of several (a title), in an isolate of its own
    (FSI … PDI) when it holds direction controls: whatever it leaves open ends with it.

    A PDI of its own that would close the fence early closes one of as many more FSIs put before it.
    """
    if _DIRECTIONAL.search(text) is None:
        return text
    depth = stray = 0
    for char in _DIRECTIONAL.findall(text):
        if char in _ISOLATES:
            depth += 1
        elif char == _PDI and depth:
            depth -= 1
        elif char == _PDI:
            stray += 1
    return "\u2068" * (stray + 1) + text + _PDI * (depth + 1)


def _present(pairs: list[tuple[str, str | None]]) -> list[Field]:
    """Label/value pairs with a known value; a missing optional value is left out."""
    return [Field(label, value) for label, value in pairs if value not in (None, "")]


def title(bundle: Bundle) -> str:
    """"{model} on {gpu} {vram}GB ×{count}", each hardware part only when known; model and GPU fenced."""
    hw = bundle.hardware
    text = fenced(bundle.model)
    if hw.gpu:
        text += f" on {fenced(hw.gpu)}"
    if hw.vram_per_gpu_gb is not None:
        text += f" {f.plain_number(hw.vram_per_gpu_gb)}GB"
    if hw.gpu_count:
        text += f" ×{hw.gpu_count}"
    return text


def summary_engine(bundle: Bundle) -> str:
    """"vllm · 0.29.0 · NVFP4": engine, version and quantization where known."""
    engine = bundle.engine
    return " · ".join(fenced(p) for p in (engine.name, engine.version, engine.quantization) if p)


def _range(labels: list[str], noun: str) -> str:
    if not labels:
        return ""
    if len(labels) == 1:
        return f"1 {noun} ({labels[0]})"
    return f"{len(labels)} {noun}s ({labels[0]}–{labels[-1]})"


def contexts_of(bundle: Bundle) -> list[int]:
    return sorted({c.context_tokens for c in bundle.decode})


def concurrencies_of(bundle: Bundle) -> list[int]:
    return sorted({c.concurrency for c in bundle.decode})


def summary_shape(bundle: Bundle) -> str:
    """"6 contexts (8K–251K) × 8 concurrency levels (1–128) · prefill at 8K, 16K"."""
    parts = []
    contexts = [f.context_label(c) for c in contexts_of(bundle)]
    levels = [str(n) for n in concurrencies_of(bundle)]
    if contexts:
        parts.append(f"{_range(contexts, 'context')} × {_range(levels, 'concurrency level')}")
    prefill = [f.context_label(p.context_tokens) for p in sorted(bundle.prefill, key=lambda p: p.context_tokens)]
    if prefill:
        parts.append("prefill at " + ", ".join(prefill))
    return " · ".join(parts)


def byline(bundle: Bundle) -> str | None:
    """"by @keennaylmx dev import", or None when neither is known."""
    parts = [fenced(p) for p in (bundle.submitter, bundle.origin) if p]
    return "by " + " ".join(parts) if parts else None


def _known(value: object, shown: Callable[[Any], str]) -> str | None:
    """A value as the page shows it, or None when unknown."""
    return None if value is None else shown(value)


# The Hardware, Engine and Run sections: each field's label and how the page shows its value.
FIELDS: dict[str, tuple[tuple[str, Callable[[Bundle], str | None]], ...]] = {
    "Hardware": (
        ("Type", lambda b: b.hardware.type),
        ("GPU", lambda b: b.hardware.gpu),
        ("GPU count", lambda b: _known(b.hardware.gpu_count, str)),
        ("VRAM", lambda b: _known(b.hardware.vram_per_gpu_gb, lambda gb: f.vram(gb, b.hardware.gpu_count))),
        ("OS", lambda b: b.hardware.os),
    ),
    "Engine": (
        ("Engine", lambda b: b.engine.name), ("Version", lambda b: b.engine.version),
        ("Quantization", lambda b: b.engine.quantization), ("Backend", lambda b: b.engine.backend),
        ("Repository", lambda b: b.engine.repository), ("Build", lambda b: b.engine.build),
        ("Commit", lambda b: b.engine.commit),
    ),
    "Run": (
        ("Served model", lambda b: b.run.served_model), ("Revision", lambda b: b.run.revision),
        ("Benchmark tool", lambda b: b.run.benchmark_tool), ("Decode test", lambda b: b.run.decode_test),
        ("Prefill mode", lambda b: b.run.prefill_mode),
        ("Time per measurement", lambda b: _known(b.run.seconds_per_measurement, f.seconds_setting)),
        ("Max output", lambda b: _known(b.run.max_output_tokens, f.tokens_setting)),
    ),
}
SECTION_LABELS: dict[str, tuple[str, ...]] = {heading: tuple(label for label, _ in fields) for heading, fields in FIELDS.items()}


def sections(bundle: Bundle) -> list[Section]:
    """The Hardware, Engine and Run label/value sections, each with its known fields."""
    found = [(heading, _present([(label, value(bundle)) for label, value in fields])) for heading, fields in FIELDS.items()]
    return [Section(heading, fields) for heading, fields in found if fields]


def prefill_item(point: PrefillPoint) -> PrefillItem:
    label = f"{f.context_label(point.context_tokens)} context"
    if point.status == "Valid" and point.prompt_tok_s is not None:
        ttft = f"{f.ms_whole(point.ttft_ms)} TTFT" if point.ttft_ms is not None else ""
        return PrefillItem(label, prefill_value(point), ttft, point.status, None)
    return PrefillItem(label, point.status, "", point.status, point.error)


def heat_scale(cells: list[DecodeCell]) -> float:
    """The largest total tok/s among cells with a value; 0 when none."""
    return max((c.total_tok_s for c in cells if has_value(c)), default=0.0)


def matrix_cell(cell: DecodeCell | None, texts: list[str] | None, context: str, concurrency: int, top: float) -> MatrixCell:
    """A cell's display: value and TTFT, a status word, or both for Requests queued.

    `texts` is the cell's row of the measurements table (decode_row), whose figures it shows.
    """
    if cell is None or texts is None:
        return MatrixCell(context, concurrency, "", f.EMPTY, "", "", None, None)
    if shows_figures(cell):
        ttft = f"{texts[6]} TTFT" if cell.ttft_ms is not None else ""
        note = "" if cell.status == "Valid" else cell.status
        if cell.status == DISTORTED:
            return MatrixCell(context, concurrency, cell.status, texts[4], note, ttft, None, cell.distortion or None)
        # Heat on a log scale, so small contexts' single streams still show a tint.
        heat = math.log1p(cell.total_tok_s) / math.log1p(top) if top > 0 else 0.0
        return MatrixCell(context, concurrency, cell.status, texts[4], note, ttft, round(heat, 3), None)
    return MatrixCell(context, concurrency, cell.status, "", cell.status, "", None, cell.error)


def matrix(bundle: Bundle, rows: dict[tuple[int, int], list[str]]) -> list[MatrixRow]:
    """Rows by context, columns by concurrency; a cell the run never planned shows "—".

    `rows` are the measurements table's rows by cell (context, concurrency): the figures they format.
    """
    by_key = {(c.context_tokens, c.concurrency): c for c in bundle.decode}
    top = heat_scale(bundle.decode)
    found = []
    levels = concurrencies_of(bundle)
    for context in contexts_of(bundle):
        label = f.context_label(context)
        cells = [matrix_cell(by_key.get((context, n)), rows.get((context, n)), label, n, top) for n in levels]
        found.append(MatrixRow(label, cells))
    return found


def legend(bundle: Bundle) -> list[str]:
    """Legend lines for the statuses that occur, in the published order."""
    present = {c.status for c in bundle.decode} | {p.status for p in bundle.prefill}
    return [line for status, line in LEGEND.items() if status in present]


def prefill_row(point: PrefillPoint) -> list[str]:
    valid = point.status == "Valid"
    return [
        "Prefill", f.context_label(point.context_tokens), "1", point.status,
        f.tok_s(point.prompt_tok_s), f.EMPTY, f.ms_whole(point.ttft_ms), f.EMPTY, f.EMPTY,
        "1" if valid else f.EMPTY, f.EMPTY, f.EMPTY,
    ]


def decode_row(cell: DecodeCell) -> list[str]:
    return [
        "Sustained decode", f.context_label(cell.context_tokens), f.count(cell.concurrency), cell.status,
        f.tok_s(cell.total_tok_s), f.one_decimal(cell.per_request_tok_s), f.ms_whole(cell.ttft_ms),
        f.ms_tenth(cell.tbt_ms), f.one_decimal(cell.avg_active), f.count(cell.completed),
        f.count(cell.output_tokens), f.seconds_tenth(cell.measured_s),
    ]


def sorted_prefill(bundle: Bundle) -> list[PrefillPoint]:
    return sorted(bundle.prefill, key=lambda p: p.context_tokens)


def sorted_decode(bundle: Bundle) -> list[DecodeCell]:
    return sorted(bundle.decode, key=lambda c: (c.context_tokens, c.concurrency))


def error_lines(bundle: Bundle) -> list[str]:
    """Why each Failed cell failed, shown below the page's matrix element."""
    lines = [f"Prefill {f.context_label(p.context_tokens)}: {p.error}" for p in sorted_prefill(bundle) if p.error]
    lines += [
        f"{f.cell_label(c.context_tokens, c.concurrency)}: {c.error}" for c in sorted_decode(bundle) if c.error
    ]
    return lines


def distortion_lines(bundle: Bundle) -> list[str]:
    """Why each cell the cross-check found distorted is so, shown below the page's matrix element.

    Distorted cells, and Requests queued cells whose windows were distorted too (the queue the
    server reported decides their status).
    """
    return [f"{f.cell_label(c.context_tokens, c.concurrency)}"
            f"{'' if c.status == DISTORTED else f' ({c.status})'}: {c.distortion}"
            for c in sorted_decode(bundle) if c.distortion]


def client_priority(client: ClientMachine) -> str | None:
    """The runner's priority as measured: "nice -10", with its session's where recorded ("nice -10, session nice -10")."""
    if client.nice is msgspec.UNSET:
        return None
    session = "" if client.session_nice is msgspec.UNSET else f", session nice {client.session_nice}"
    return f"nice {client.nice}{session}"


def machine_fields(bundle: Bundle) -> list[Field]:
    """The client machine and the GPU driver, where the runner recorded them (outside #matrix)."""
    hw = bundle.hardware
    client = hw.client if hw.client is not msgspec.UNSET else None
    pairs: list[tuple[str, str | None]] = []
    if client is not None:
        pairs += [("Client CPU", client.cpu), ("Client cores", f.count(client.cores) if client.cores else None),
                  ("Client memory", f"{f.plain_number(client.memory_gb)} GB" if client.memory_gb else None),
                  ("Client priority", client_priority(client))]
    pairs += [("GPU driver", hw.gpu_driver or None), ("CUDA", hw.cuda_version or None)]
    return _present(pairs)


def run_view(bundle: Bundle) -> RunView:
    """Build the whole display view of one run (each cell's figures formatted once, for the table and the matrix)."""
    decode_rows = {(c.context_tokens, c.concurrency): decode_row(c) for c in sorted_decode(bundle)}
    return RunView(
        title=title(bundle),
        summary_engine=summary_engine(bundle),
        summary_shape=summary_shape(bundle),
        byline=byline(bundle),
        measured=f"Measured {f.measured_at(bundle.measured_at)}" if bundle.measured_at else None,
        sections=sections(bundle),
        launch_command=bundle.launch_command,
        prefill=[prefill_item(p) for p in sorted_prefill(bundle)],
        concurrencies=concurrencies_of(bundle),
        matrix=matrix(bundle, decode_rows),
        legend=legend(bundle),
        ttft_note=ttft_note(bundle),
        table=[prefill_row(p) for p in sorted_prefill(bundle)] + list(decode_rows.values()),
        errors=error_lines(bundle),
        distortions=distortion_lines(bundle),
        machine=machine_fields(bundle),
    )
