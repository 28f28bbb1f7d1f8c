"""Atomic builds: render into a fresh folder beside the site, then swap it in.

A build that fails leaves the previous site exactly as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sitegen.errors import InputError


class Stage:
    """A folder being filled with the next site; refuses paths that leave it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def path(self, relative: str) -> Path:
        """The absolute path of a site-relative file, after checking it stays inside."""
        target = (self.root / relative).resolve()
        if target != self.root and self.root not in target.parents:
            raise InputError(relative, None, "refusing to write outside the output folder")
        return target

    def write(self, relative: str, data: bytes | str) -> None:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def copy(self, relative: str, source: Path) -> None:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


@contextmanager
def staged(out: Path) -> Iterator[Stage]:
    """Yield a Stage; on success it replaces `out`, on any error it is removed."""
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise InputError(out, None, "the output path exists and is not a folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-build-", dir=out.parent))
    try:
        yield Stage(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.chmod(tmp, 0o755)
    old = out.parent / f".{out.name}-old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
