"""Incremental builds: reuse a previous build's output for inputs that did not change.

Each group of output files (a run's folder, a comparison page) has a key: a
hash of everything it is rendered from, including the templates and sitegen's
own code. When the previous site holds the same key, its files are hard-linked
into the new build instead of being rendered again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from sitegen.staging import Stage

MANIFEST = ".build-cache.json"
_CODE_ROOTS = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "runner" / "schema.py")


def digest(*parts: bytes | str) -> str:
    """A short, stable hash of the parts, each length-prefixed so they cannot run together."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()[:32]


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


class BuildCache:
    """Keys of the previous build, and the keys of this one as it is written."""

    def __init__(self, previous_site: Path) -> None:
        self.previous_site = previous_site
        self.old: dict[str, str] = {}
        self.new: dict[str, str] = {}
        self.reused = 0
        manifest = previous_site / MANIFEST
        if manifest.is_file():
            try:
                self.old = json.loads(manifest.read_text())
            except (OSError, ValueError):
                self.old = {}

    def reuse(self, stage: Stage, folder: str, key: str) -> bool:
        """Link `folder` from the previous site into the stage if its key is unchanged."""
        self.new[folder] = key
        source = self.previous_site / folder
        if self.old.get(folder) != key or not source.is_dir():
            return False
        target = stage.path(folder)
        target.mkdir(parents=True, exist_ok=True)
        for item in source.iterdir():
            if item.is_file():
                _link_or_copy(item, target / item.name)
        self.reused += 1
        return True

    def save(self, stage: Stage) -> None:
        stage.write(MANIFEST, json.dumps(self.new, sort_keys=True, indent=0))


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
