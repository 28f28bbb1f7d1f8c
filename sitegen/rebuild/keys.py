"""The hashes of incremental builds: of content (a bundle's fingerprint), of sitegen's code, of an
output's inputs (which outputs.output_key makes into its key).

An output whose key is unchanged since the last build is not rendered again (plan.Publication).
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import runner.bundle

# sitegen's own code and the contract package it renders through (schema, formats, display, redaction).
_CODE_ROOTS = (Path(__file__).resolve().parents[1], Path(runner.bundle.__file__).resolve().parent)


def digest(*parts: bytes | str) -> str:
    """A short, stable hash of the parts, each length-prefixed so they cannot run together."""
    framed = []
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        framed += (len(data).to_bytes(8, "big"), data)
    return hashlib.sha256(b"".join(framed)).hexdigest()[:32]


def fingerprint(data: bytes | str) -> str:
    """What identifies a piece of content (a bundle file's bytes): its hash, as long as every fingerprint."""
    return digest(data)


def tree_digest(*roots: Path) -> str:
    """Hash of every file under the roots, by relative path and content."""
    parts: list[bytes | str] = []
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for path in files:
            parts += [path.name if root.is_file() else path.relative_to(root).as_posix(), path.read_bytes()]
    return digest(*parts)


def code_digest(templates: Path) -> str:
    """What every page depends on: the templates and the code that renders them."""
    return tree_digest(templates, *_CODE_ROOTS)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector for a block that makes many objects and no cycles:
    decoding the cache or the manifest of 10,000 runs then skips the collections that would find nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
