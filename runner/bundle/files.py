"""Files in and out: input read without blocking on a FIFO, bundles written whole or not at all.

The runner writes its bundle after every cell and `sitegen import` writes what it imports, both
through write_bundle; a simulator config, a bundle and an imported file are read by read_input.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from runner.bundle.schema import Bundle, encode_bundle, schema_problem


class InvalidBundle(ValueError):
    """A bundle the schema rejects was about to be written; `where` is its `$.field`."""

    def __init__(self, where: str, what: str) -> None:
        """The field and what is wrong with it."""
        super().__init__(f"{where}: {what}")
        self.where, self.what = where, what


class Unreadable(Exception):
    """An input file cannot be read; str() is the one-line reason ("cannot read: a folder")."""


def read_input(path: Path) -> bytes:
    """The bytes of an input file; a FIFO, device or folder is refused without being opened (it could block forever)."""
    try:
        if not path.is_file():
            kind = "a folder" if path.is_dir() else "not a regular file" if path.exists() else "no such file"
            raise Unreadable(f"cannot read: {kind}")
        return path.read_bytes()
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers see the old or the new file, never half; no temporary file stays.

    The data goes to a temporary file in the same folder (made if missing), fsync'd, then renamed over `path`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, 0o644)  # mkstemp makes files private; bundles are for sharing
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_bundle(path: Path, bundle: Bundle) -> None:
    """Write `bundle` to `path` atomically, encoded as every bundle is (runner/bundle/schema.py).

    A bundle the schema rejects (a negative or non-finite figure, say) is never written: sitegen
    would refuse it, so InvalidBundle is raised instead."""
    problem = schema_problem(bundle)
    if problem is not None:
        raise InvalidBundle(*problem)
    write_atomic(path, encode_bundle(bundle))
