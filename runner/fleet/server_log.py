"""A launched server's output kept beside its bundle: redacted, each line bounded, the file rotated.

The server's stdout and stderr arrive here a read at a time from a pipe a thread drains, so a
server that prints without end neither blocks on a full pipe nor fills the disk: a line is cut
at MAX_LINE_CHARS, and past MAX_LOG_BYTES the file moves to `<name>.1` (replacing the one
before) and a new one starts. The last TAIL_LINES lines stay in memory for error messages.
"""

from __future__ import annotations

import collections
import os
import threading
from pathlib import Path
from typing import BinaryIO

from runner.bundle.redact import redact

MAX_LINE_CHARS = 8192
MAX_LOG_BYTES = 16 * 1024 * 1024
TAIL_LINES = 20
_READ_BYTES = 65536


def server_log_path(out: Path) -> Path:
    """Where the server log of the bundle at `out` lives: beside it, as `<id>.server.log`."""
    return out.with_name(out.name.removesuffix(".json") + ".server.log")


class ServerLog:
    """Lines of a server's output, written redacted to `path` and kept in a short tail."""

    def __init__(self, path: Path, secrets: list[str]) -> None:
        """Write to `path` (appending to an earlier log of the same run), redacting `secrets`."""
        self.path = path
        self.secrets = secrets
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO | None = path.open("ab")

    def drain(self, pipe: BinaryIO) -> threading.Thread:
        """Start a thread that writes every line read from `pipe` until it closes."""
        thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True, name="server-log")
        thread.start()
        return thread

    def _drain(self, pipe: BinaryIO) -> None:
        pending = b""
        dropping = False  # the rest of a line past MAX_LINE_CHARS
        while chunk := os.read(pipe.fileno(), _READ_BYTES):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not dropping:
                    self.write(line)
                dropping = False
            if len(pending) > MAX_LINE_CHARS * 4:
                if not dropping:
                    self.write(pending[: MAX_LINE_CHARS * 4])
                pending, dropping = b"", True
        if pending and not dropping:
            self.write(pending)
        pipe.close()

    def write(self, raw: bytes) -> None:
        """Write one line of output: decoded, cut, redacted."""
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f"… ({len(text) - MAX_LINE_CHARS:,} more characters)"
        text = redact(text, self.secrets)
        with self._lock:
            self.tail.append(text)
            if self._file is None:
                return
            self._file.write(text.encode() + b"\n")
            self._file.flush()
            if self._file.tell() > MAX_LOG_BYTES:
                self._rotate()

    def note(self, text: str) -> None:
        """A line of the runner's own in the log (when the server started, how it ended)."""
        self.write(f"[runner] {text}".encode())

    def _rotate(self) -> None:
        assert self._file is not None
        self._file.close()
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._file = self.path.open("ab")

    def move_to(self, path: Path) -> None:
        """Go on writing at `path`; an earlier log there (a resumed run's) becomes `<name>.1`."""
        if path == self.path:
            return
        with self._lock:
            if path.exists():
                os.replace(path, path.with_name(path.name + ".1"))
            os.replace(self.path, path)
            self.path = path

    def close(self) -> None:
        """Close the file; later lines go to the tail only."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
