"""The chat API against a real engine, judged as completions are: exact prompts, and every cell's
output tokens beside the server's own counter."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from runner.bundle.formats import cell_label
from runner.bundle.schema import Bundle, decode_bundle
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from tests.builders import FIGURES

MEASURED = ("Valid", "Distorted", "Requests queued")


def measure_chat(base_url: str, out: Path, **changes: object) -> Bundle:
    """A 1K and 2K × 1 and 4 matrix through the chat API."""
    settings = dict(base_url=base_url, out=out, api="chat", contexts=[1024, 2048], prefill_contexts=[1024],
                    concurrency=[1, 4], duration=2.0, max_output=128)
    settings.update(changes)
    asyncio.run(measure(Options(**settings), progress=Progress(0, io.StringIO())))
    return decode_bundle(out.read_bytes())


def check_chat_cells(bundle: Bundle, engine: str) -> None:
    """The prompts are exact in the server's tokens with its chat template; each undistorted cell's
    output tokens are within 1 % of the server's counter for the window; statuses as measured."""
    assert bundle.run.api == "chat"
    point = bundle.prefill[0]
    assert point.prompt_tokens == point.context_tokens  # the server's usage of the templated prompt
    checked = 0
    for cell in bundle.decode:
        assert cell.status in MEASURED, (cell.context_tokens, cell.concurrency, cell.status, cell.error)
        assert cell.prompt_tokens == cell.context_tokens
        server = cell.server
        if server and server.generated_tokens and not cell.distortion:
            off = cell.output_tokens / server.generated_tokens - 1
            assert abs(off) <= 0.01, (cell.context_tokens, cell.concurrency, off)
            checked += 1
        FIGURES.append(f"{engine} chat {cell_label(cell.context_tokens, cell.concurrency)}: {cell.status}, "
                       f"{cell.output_tokens} output tokens, the server counted "
                       f"{server.generated_tokens if server else None}")
    assert checked >= 1, "no chat cell was checked against the server's counter"
