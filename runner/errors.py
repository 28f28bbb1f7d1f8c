"""Every error the runner stops with or records, in one place; str() of each is one line for the user.

The simulator (runner/simulator/) is a server of its own and keeps its HTTP errors there.
"""

from __future__ import annotations


class OptionError(ValueError):
    """A user-supplied option is malformed."""


class ServerError(Exception):
    """The server cannot be measured: not ready, wrong model, …"""


class JournalError(Exception):
    """The run's journal cannot be used: in use by another runner, damaged, not a file."""


class MeasureError(Exception):
    """The run stopped cleanly; what `runner measure` and `runner probe` print before exiting.

    `details` are lines printed before the error line (a launched server's last log lines).
    """

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        """The one-line message and the lines that explain it."""
        super().__init__(message)
        self.details = details or []


class RequestFailed(Exception):
    """A request could not be completed; the reason is fit for a bundle's `error` field."""


class LoopDetected(Exception):
    """A stream's text became an exact repetition (see runner.loops)."""
