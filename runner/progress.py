"""Progress on stderr: one rewritten line on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def duration_text(seconds: float) -> str:
    """A short human duration: "45 s", "12 min", "2 h 05 min"."""
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Reports the current cell, live tok/s, cells done and the ETA."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        """Track `total` matrix items (prefill points and decode cells)."""
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.total = total
        self.done = 0
        self.label = ""
        self.eta: float | None = None
        self._cell_started = time.monotonic()

    def start(self, label: str, done: int, eta_s: float | None) -> None:
        """A new item begins; `done` items are finished and about `eta_s` seconds remain."""
        self.label, self.done, self.eta = label, done, eta_s
        self._cell_started = time.monotonic()
        if self.tty:
            self._line(self._status())
        else:
            self._print(self._status())

    def live(self, tokens: int) -> None:
        """Update the live token rate of the running window (terminal only)."""
        if self.tty:
            rate = tokens / max(1e-6, time.monotonic() - self._cell_started)
            self._line(f"{self._status()} · {rate:,.1f} tok/s")

    def finish(self, summary: str) -> None:
        """An item ended; keep its one-line summary."""
        if self.tty:
            self._line("")
        self._print(f"  {self.label}: {summary}")

    def note(self, message: str) -> None:
        """A plain message (skipped cells, resume, where files go)."""
        if self.tty:
            self._line("")
        self._print(message)

    def _status(self) -> str:
        eta = f" · ETA {duration_text(self.eta)}" if self.eta is not None else ""
        return f"[{self.done}/{self.total}] {self.label}{eta}"

    def _line(self, text: str) -> None:
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()

    def _print(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
