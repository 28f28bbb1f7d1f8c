"""Writing bundles to disk: whole or not at all, by the runner after every cell and by `sitegen import`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from runner.bundle.schema import Bundle, encode_bundle


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
    """Write `bundle` to `path` atomically, encoded as every bundle is (runner/bundle/schema.py)."""
    write_atomic(path, encode_bundle(bundle))
