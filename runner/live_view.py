"""The live view of a run on a terminal: the matrix filling in, drawn with Rich.

It implements runner.progress.RunEvents. Cells show what the run page will show (the
page's number formats and status words, from the contract's display module); the running cell shows
its live tok/s. Grids wider than the terminal first shorten status words, then wrap
their columns into stacked blocks, so every figure stays on screen. When the run ends
the last frame stays on screen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType
from rich.live import Live
from rich.text import Text

from runner.bundle import display, formats
from runner.bundle.formats import context_label
from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint
from runner.bundle.terminal_text import printable
from runner.plan import PlanSpec
from runner.progress import duration_text, item_label

PENDING = "·"
RUNNING = "›"
QUEUED_MARK = "*"
DISTORTED_MARK = "!"
# Status words too wide for a narrow column, and what they shorten to (the legend says so).
SHORT = {"Over capacity": "Over-cap"}
# A style for every status of the schema (a test holds them to STATUSES), and for the view's own marks.
STYLES = {"Valid": "green", "Requests queued": "yellow", "Distorted": "bold yellow", "Over capacity": "dim",
          "Looped": "magenta", "Failed": "bold red", PENDING: "dim", RUNNING: "bold cyan"}
# A figure that is not a plain Valid result carries a mark after it; the legend names it.
MARKS = {"Requests queued": QUEUED_MARK, "Distorted": DISTORTED_MARK}
GUTTER = 1
BAR_WIDTH = 20
REFRESH_PER_S = 2

Cell = tuple[str, str]  # (text, style)


class LiveView:
    """The matrix, the prefill results, progress, ETA and the current phase, redrawn in place."""

    def __init__(self, stream: TextIO | None = None, console: Console | None = None,
                 clock: Callable[[], float] = time.monotonic, banner: Callable[[], str] | None = None) -> None:
        """Draw on `console` (default: one on `stream`); `clock` tells seconds, for tests; `banner`
        gives a line drawn above the matrix (a sweep's: which setup, elapsed, ETA)."""
        self.console = console or Console(file=stream, highlight=False)
        self.clock = clock
        self.banner = banner
        self.out: Path | None = None
        self.plan: PlanSpec | None = None
        self.cells: dict[tuple[int, int], DecodeCell] = {}
        self.points: dict[int, PrefillPoint] = {}
        self.total = self.done = 0
        self.running: tuple[int, int | None] | None = None
        self.word = ""
        self.tokens = 0
        self.ended: str | None = None
        self._started = self._eta_from = self._phase_from = self._tokens_at = clock()
        self._eta_s: float | None = None
        self._lock = threading.Lock()
        self._live: Live | None = None

    # RunEvents

    def note(self, message: str) -> None:
        """Print the message above the live area, where it stays."""
        self.console.print(Text(printable(message)), soft_wrap=True)

    def run_started(self, plan: PlanSpec, bundle: Bundle, out: Path, done: int, total: int) -> None:
        """Show the grid of the plan with what is already finished, and start redrawing."""
        with self._lock:
            self.plan, self.out, self.done, self.total = plan, out, done, total
            self.cells = {(c.context_tokens, c.concurrency): c for c in bundle.decode}
            self.points = {p.context_tokens: p for p in bundle.prefill}
            self._started = self.clock()
        self._live = Live(self, console=self.console, refresh_per_second=REFRESH_PER_S,
                          redirect_stdout=False, redirect_stderr=False)
        self._live.start()

    def cell_started(self, context: int, concurrency: int | None, done: int, eta_s: float) -> None:
        """Mark the item as running; the ETA counts down from `eta_s`."""
        with self._lock:
            self.running, self.done, self._eta_s = (context, concurrency), done, eta_s
            self._eta_from = self.clock()
            self._set_phase("starting")

    def phase(self, word: str) -> None:
        """Say what the running item does now."""
        with self._lock:
            self._set_phase(word)

    def live_tokens(self, tokens: int) -> None:
        """Take the running window's token count; its rate shows in the cell."""
        self.tokens, self._tokens_at = tokens, self.clock()

    def cell_finished(self, cell: DecodeCell) -> None:
        """Fill the cell in."""
        with self._lock:
            self.cells[(cell.context_tokens, cell.concurrency)] = cell
            self._finish()

    def prefill_done(self, point: PrefillPoint) -> None:
        """Fill the prefill point in."""
        with self._lock:
            self.points[point.context_tokens] = point
            self._finish()

    def run_ended(self, interrupted: bool) -> None:
        """Draw the last frame and leave it on screen."""
        if self._live is None:
            return
        with self._lock:
            self.ended = "interrupted" if interrupted else "finished" if self.done == self.total else "stopped"
            self.running = None
        self._live.stop()
        self._live = None

    # Drawing

    def _set_phase(self, word: str) -> None:
        self.word, self.tokens, self._phase_from = word, 0, self.clock()
        self._tokens_at = self._phase_from

    def _finish(self) -> None:
        self.done += 1
        self.running = None

    def live_rate(self) -> float | None:
        """The running window's tok/s up to its latest count, while a window is measuring."""
        seconds = self._tokens_at - self._phase_from
        return self.tokens / seconds if self.word == "measuring" and self.tokens and seconds > 0 else None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        """One frame: prefill, decode matrix, legend, then progress and what is happening now."""
        with self._lock:  # build the frame under the lock, draw it outside
            frame = self._frame(options.max_width) if self.plan is not None else []
        yield from frame

    def _frame(self, width: int) -> list[RenderableType]:
        assert self.plan is not None
        header = ["Context", *map(str, self.plan.concurrency)]
        rows = [(context_label(c), [self._cell(c, n) for n in self.plan.concurrency]) for c in self.plan.contexts]
        short = not fits(header, rows, width)
        if short:
            rows = [(label, [(SHORT.get(text, text), style) for text, style in cells]) for label, cells in rows]
        prefill = self.plan.prefill_contexts
        return [
            *([Text(printable(self.banner()), style="bold reverse")] if self.banner else []),
            *([Text(f"Prefill · {display.PREFILL_CAPTION}", style="bold"),
               grid(["Context", *map(context_label, prefill)], [("tok/s", [self._point(c) for c in prefill])], width),
               Text()] if prefill else []),
            Text(f"Sustained decode · {display.DECODE_CAPTION}", style="bold"),
            grid(header, rows, width),
            Text(self._legend(short), style="dim"),
            self._progress(),
            Text(self._now(), style="bold"),
        ]

    def _point(self, context: int) -> Cell:
        if self.running == (context, None):
            return RUNNING + "…", STYLES[RUNNING]
        point = self.points.get(context)
        if point is None:
            return PENDING, STYLES[PENDING]
        return display.prefill_value(point), STYLES[point.status]

    def _cell(self, context: int, concurrency: int) -> Cell:
        if self.running == (context, concurrency):
            rate = self.live_rate()
            return RUNNING + (formats.tok_s(rate) if rate is not None else "…"), STYLES[RUNNING]
        cell = self.cells.get((context, concurrency))
        if cell is None:
            return PENDING, STYLES[PENDING]
        if not display.shows_figures(cell):
            return cell.status, STYLES[cell.status]
        text = formats.tok_s(cell.total_tok_s) + MARKS.get(cell.status, "")
        return text, STYLES[cell.status]

    def _legend(self, short: bool) -> str:
        statuses = {c.status for c in self.cells.values()}
        parts = [f"{RUNNING} running"] * (self.running is not None)
        if len(self.cells) + len(self.points) < self.total:
            parts.append(f"{PENDING} to measure")
        parts += [f"{mark} {status}" for status, mark in MARKS.items() if status in statuses]
        parts += [f"{word}: {status}" for status, word in SHORT.items() if short and status in statuses]
        return "   ".join(parts)

    def _progress(self) -> Text:
        """`━━━━━━────── 12/48 · 6 min elapsed · ETA 18 min`; the bar reads without colour too."""
        now = self.clock()
        filled = BAR_WIDTH * self.done // max(1, self.total)
        times = [f"{self.done}/{self.total}", f"{duration_text(now - self._started)} elapsed"]
        if self.ended is None and self._eta_s is not None:
            times.append(f"ETA {duration_text(self._eta_s - (now - self._eta_from))}")
        line = Text("━" * filled, style="green")
        line.append("─" * (BAR_WIDTH - filled), style="dim")
        line.append(" " + " · ".join(times))
        return line

    def _now(self) -> str:
        if self.ended == "finished":
            return f"finished: every item is measured; bundle: {self.out}"
        if self.ended is not None:
            return f"{self.ended}: finished items are kept in the journal beside {self.out}"
        if self.running is None:
            return "between items"
        text = f"{item_label(*self.running)} · {self.word}"
        if self.word == "measuring" and self.running[1] is not None and self.plan is not None:
            text += f" {self.clock() - self._phase_from:.0f} of {self.plan.duration:g} s"
            rate = self.live_rate()
            if rate is not None:
                text += f" · {formats.tok_s(rate)} tok/s"
        return text


def _widths(header: list[str], rows: list[tuple[str, list[Cell]]]) -> list[int]:
    """Each column's width: its widest text, header included."""
    columns = [[row[0], *(text for text, _ in row[1])] for row in rows]
    return [max(cell_len(text) for text in [name, *(col[i] for col in columns)]) for i, name in enumerate(header)]


def fits(header: list[str], rows: list[tuple[str, list[Cell]]], width: int) -> bool:
    """Whether the grid fits `width` columns in one block."""
    return sum(_widths(header, rows)) + GUTTER * (len(header) - 1) <= width


def grid(header: list[str], rows: list[tuple[str, list[Cell]]], width: int) -> Text:
    """The grid in at most `width` columns: the label column repeats, the others wrap into stacked blocks.

    Drawn as one Text rather than a rich Table: a frame is redrawn several times a second in the
    process that times the streams, and a Table costs far more to lay out.
    """
    widths = _widths(header, rows)
    block = Text(no_wrap=True, overflow="crop")
    start = 1
    while start < len(header):
        end, used = start, widths[0]
        while end < len(header) and (end == start or used + GUTTER + widths[end] <= width):
            used += GUTTER + widths[end]
            end += 1
        for label, cells in [(header[0], [(name, "bold") for name in header[1:]]), *rows]:
            if block:
                block.append("\n")
            block.append(label + " " * (widths[0] - cell_len(label)), style="bold")
            for i in range(start, end):
                text, style = cells[i - 1]
                block.append(" " * (GUTTER + widths[i] - cell_len(text)) + text, style=style)
        start = end
    return block
