"""What the runner tells the user while it measures: one event interface, and its plain-lines reporter.

The driver (runner.measure) emits RunEvents and never knows what is on screen: `Progress`
writes the plain lines logs and CI see, runner.live_view draws the matrix on a terminal, and
`reporter_for` picks one for a stream.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TextIO

from runner.bundle import formats
from runner.bundle.formats import context_label
from runner.bundle.redact import redact
from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint
from runner.bundle.terminal_text import printable
from runner.plan import PlanSpec


class RunEvents(Protocol):
    """Everything the driver says about a run, in the order it happens."""

    out: Path | None  # the bundle being written, once run_started has said it (for the resume hint)

    def note(self, message: str) -> None:
        """A plain message: how tokens are counted, where files go, a skipped cell."""

    def run_started(self, plan: PlanSpec, bundle: Bundle, out: Path, done: int, total: int) -> None:
        """Measuring begins: the plan, what is journaled already (after --resume), the bundle path, and how
        many of the `total` items are finished."""

    def cell_started(self, context: int, concurrency: int | None, done: int, eta_s: float) -> None:
        """An item begins (concurrency None: the prefill point); `done` items are finished, about `eta_s` s remain."""

    def phase(self, word: str) -> None:
        """What the running item does now, in a free word: "warming", "measuring", "settling", "retrying"…

        A decode window begins with "measuring"; live_tokens counts from there.
        """

    def live_tokens(self, tokens: int) -> None:
        """Output tokens the running decode window has received so far."""

    def cell_finished(self, cell: DecodeCell) -> None:
        """A decode cell is journaled."""

    def prefill_done(self, point: PrefillPoint) -> None:
        """A prefill point is journaled."""

    def run_ended(self, interrupted: bool) -> None:
        """The run is over: finished, stopped by an error, or (`interrupted`) by Ctrl-C."""


def duration_text(seconds: float) -> str:
    """A short human duration: "45 s", "12 min", "2 h 05 min"."""
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def item_label(context: int, concurrency: int | None) -> str:
    """An item as the runner names it: "prefill 8K", "decode 8K × 4"."""
    if concurrency is None:
        return f"prefill {context_label(context)}"
    return f"decode {formats.cell_label(context, concurrency)}"


def summary_line(item: PrefillPoint | DecodeCell) -> str:
    """One line about a finished item, in the pages' number formats."""
    if item.status == "Failed":
        return f"Failed: {item.error}"
    if isinstance(item, PrefillPoint):
        if item.prompt_tok_s is None:
            return item.status
        return f"{formats.prefill_tok_s(item.prompt_tok_s)} prompt tok/s, {formats.ms_whole(item.ttft_ms)} TTFT"
    if item.total_tok_s is None:
        return item.status
    ttft = "no TTFT" if item.ttft_ms is None else f"{formats.ms_whole(item.ttft_ms)} TTFT"
    line = f"{item.status}: {formats.tok_s(item.total_tok_s)} tok/s, {ttft}"
    return line + (f" ({item.distortion})" if item.status == "Distorted" and item.distortion else "")


class Progress:
    """Plain lines: one when an item starts (with the ETA), one when it ends; for logs and CI."""

    def __init__(self, total: int = 0, stream: TextIO | None = None) -> None:
        """Write to `stream` (default stderr); `total` items, until run_started says otherwise."""
        self.stream = stream or sys.stderr
        self.total = total
        self.label = ""
        self.out: Path | None = None

    def note(self, message: str) -> None:
        """Print the message, its control characters shown as escapes."""
        self._print(message)

    def run_started(self, plan: PlanSpec, bundle: Bundle, out: Path, done: int, total: int) -> None:
        """Remember how many items the run has."""
        self.out, self.total = out, total

    def cell_started(self, context: int, concurrency: int | None, done: int, eta_s: float) -> None:
        """`[done/total] decode 8K × 4 · ETA 12 min`."""
        self.label = item_label(context, concurrency)
        self._print(f"[{done}/{self.total}] {self.label} · ETA {duration_text(eta_s)}")

    def phase(self, word: str) -> None:
        """Phases are not logged: a log keeps one line per start and per result."""

    def live_tokens(self, tokens: int) -> None:
        """Live counts are not logged."""

    def cell_finished(self, cell: DecodeCell) -> None:
        """`  decode 8K × 4: Valid: 1,234.5 tok/s, 56 ms TTFT`."""
        self._print(f"  {self.label}: {summary_line(cell)}")

    def prefill_done(self, point: PrefillPoint) -> None:
        """`  prefill 8K: 9,107 prompt tok/s, 900 ms TTFT`."""
        self._print(f"  {self.label}: {summary_line(point)}")

    def run_ended(self, interrupted: bool) -> None:
        """Nothing more to say; the command line prints the outcome."""

    def _print(self, text: str) -> None:
        self.stream.write(printable(text) + "\n")  # a server's error text may hold escape sequences
        self.stream.flush()


def on_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal that can redraw a live view."""
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def reporter_for(stream: TextIO, banner: Callable[[], str] | None = None) -> RunEvents:
    """The live matrix view on a terminal that can redraw (with `banner` above it), plain lines anywhere else."""
    if on_terminal(stream):
        from runner.live_view import LiveView

        return LiveView(stream, banner=banner)
    return Progress(0, stream)


@contextmanager
def reporting(events: RunEvents) -> Iterator[RunEvents]:
    """Tell `events` the run ended, however it ends; Ctrl-C reaches a coroutine as cancellation."""
    interrupted = False
    try:
        yield events
    except (asyncio.CancelledError, KeyboardInterrupt):
        interrupted = True
        raise
    finally:
        events.run_ended(interrupted)


def resume_command(argv: Sequence[str], out: Path) -> str:
    """The command that continues a run: the one typed, with --resume and the run's --out, secrets redacted."""
    args = list(argv[1:])
    if "--resume" not in args:
        args.append("--resume")
    if not any(arg == "--out" or arg.startswith("--out=") for arg in args):
        args += ["--out", str(out)]
    return typed_command([argv[0], *args])


def typed_command(argv: Sequence[str]) -> str:
    """The command line `argv`, as one to type again: the program as the user ran it, secrets redacted."""
    program = "python3 -m runner" if argv[0].endswith("__main__.py") else "runner"
    return f"{program} {shlex.join(redact(arg) for arg in argv[1:])}"
