"""What a long-running process (`sitegen serve`) keeps of the site it published last.

Its next build then decodes neither the build cache nor the manifest again, a large share of a
rebuild at 10,000 runs. Each value is remembered with the stamp of the file it was written to
(inode and change time, which only a write or a replacement changes), and recalled only while
that file is still the one: a site rebuilt by another process, copied or edited is read again.
A one-shot `sitegen build` remembers and never recalls, at the cost of two stats.
"""

from __future__ import annotations

import os
from pathlib import Path

_REMEMBERED: dict[str, tuple[tuple[int, int], object]] = {}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_ino, found.st_ctime_ns)


def remember(path: Path, value: object) -> None:
    """Keep `value` as what the file at `path` (just written) holds."""
    stamp = _stamp(path)
    if stamp is None:
        _REMEMBERED.pop(str(path), None)
    else:
        _REMEMBERED[str(path)] = (stamp, value)


def recall(path: Path) -> object | None:
    """The value remembered for the file at `path`, while that file is still the one it was written to."""
    kept = _REMEMBERED.get(str(path))
    if kept is None or kept[0] != _stamp(path):
        return None
    return kept[1]
