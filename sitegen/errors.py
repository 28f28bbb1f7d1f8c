"""Errors a user can fix, each printed as one line: bad input names the file and the line or field."""

from __future__ import annotations

from pathlib import Path

from runner.bundle.error_lines import located


class InputError(Exception):
    """Bad input the user can fix; printed as one line, never as a traceback."""

    def __init__(self, path: Path | str, where: str | None, message: str) -> None:
        self.path = str(path)
        self.where = where
        self.message = message
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line form: `file:where: message`."""
        return located(self.path, self.where, self.message)

    def __reduce__(self) -> tuple:
        # Made again from its parts: an error raised in a forked process (parallel.Beside) is raised here.
        return (InputError, (self.path, self.where, self.message))


class InputErrors(Exception):
    """Several problems at once, so a user sees every one of them in a single run."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = errors
        super().__init__("\n".join(e.line() for e in errors))

    def __reduce__(self) -> tuple:
        return (InputErrors, (self.errors,))


class UsageError(Exception):
    """A command that cannot run as asked (a port in use); printed as one line, never as a traceback."""


def raise_if_any(errors: list[InputError]) -> None:
    """Raise the one error alone, or all of them together."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)
