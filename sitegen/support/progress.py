"""A build's progress on a terminal: one line redrawn in place (pages done of total, ETA).

Only a terminal gets it; a piped or logged build prints nothing here and keeps to the
one summary line the CLI prints at the end. A build shorter than DELAY seconds never
shows the line at all.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

DELAY = 1.0  # seconds before the line first appears
INTERVAL = 0.2  # seconds between redraws


class Progress:
    """Counts work done in named phases and redraws one status line at most every INTERVAL."""

    def __init__(self, stream: TextIO | None = None, clock=time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.started = clock()
        self.phase = ""
        self.total = 0
        self.done = 0
        self.phase_started = self.started
        self.drawn_at = 0.0
        self.shown = False

    @classmethod
    def for_terminal(cls, stream: TextIO = sys.stderr) -> Progress:
        """A display on `stream` when it is a terminal, else one that stays silent."""
        return cls(stream if stream.isatty() else None)

    def start(self, phase: str, total: int) -> None:
        """Begin a phase of `total` steps ("reading bundles", "rendering pages")."""
        self.phase, self.total, self.done = phase, total, 0
        self.phase_started = self.clock()
        self._draw()

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        self._draw()

    def line(self) -> str:
        """The status text: "rendering pages 1,234 of 25,304 (5%), about 40 s left"."""
        text = f"{self.phase} {self.done:,} of {self.total:,}"
        if self.total:
            text += f" ({100 * self.done // self.total}%)"
        elapsed = self.clock() - self.phase_started
        if self.done and self.done < self.total and elapsed > 0:
            left = elapsed / self.done * (self.total - self.done)
            text += f", about {left:.0f} s left"
        return text

    def _draw(self) -> None:
        if self.stream is None:
            return
        now = self.clock()
        if now - self.started < DELAY or (now - self.drawn_at < INTERVAL and self.done < self.total):
            return
        self.drawn_at = now
        self.stream.write("\r\x1b[2K" + self.line())
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Erase the line, so the summary that follows starts on a clean line."""
        if self.stream is not None and self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
