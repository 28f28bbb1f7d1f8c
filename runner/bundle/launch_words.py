"""A bundle's launch command read as shell words, by the runner (facts from its flags) and sitegen (what differs)."""

from __future__ import annotations

import shlex


def launch_words(command: str | None) -> list[str]:
    """Shell words of a launch command; a plain whitespace split when its quoting is unbalanced."""
    if not command:
        return []
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()
