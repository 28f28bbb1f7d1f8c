"""One kind of error for bad input: it names the file and the line or field."""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input the user can fix; printed as one line, never as a traceback."""

    def __init__(self, path: Path | str, where: str | None, message: str) -> None:
        self.path = str(path)
        self.where = where
        self.message = message
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line form: `file:where: message`."""
        place = f"{self.path}:{self.where}" if self.where else self.path
        return f"{place}: {self.message}"
