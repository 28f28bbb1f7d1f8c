"""Which files `sitegen check PATHS…` checks: each file named, and the bundles in each folder named, recursively.

In a folder, every `*.json` inside a `runs` folder is a bundle (as the build takes them); elsewhere
a `*.json` counts only if it reads as a JSON object with a bundle's `id` and `engine`, so that a
repository's other JSON files are passed over. Hidden files and folders are left out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from runner.bundle import files
from sitegen.check.decoding import read_bounded
from sitegen.check.verdict import Problem

RUNS = "runs"


class Found(msgspec.Struct, kw_only=True):
    """The bundle files to check, in order, the folders that could not be listed, and how many JSON files were not bundles."""

    files: list[Path] = []
    problems: list[Problem] = []
    passed_over: int = 0


class _Probe(msgspec.Struct):
    """The two fields every bundle has; the rest of a file is skipped while decoding."""

    id: Any = None
    engine: Any = None


def bundle_files(paths: Sequence[Path]) -> Found:
    """Every bundle file the paths name, each once."""
    found, seen = Found(), set()
    for path in paths:
        for file in _walk(path, found) if path.is_dir() else [path]:
            key = os.path.realpath(file)
            if key not in seen:
                seen.add(key)
                found.files.append(file)
    return found


def _walk(folder: Path, found: Found) -> list[Path]:
    """The bundle files under `folder`, in name order; folders that cannot be listed become problems in `found`."""
    def unlisted(error: OSError) -> None:
        """A folder os.walk could not list, as a problem."""
        found.problems.append(Problem(error.filename or str(folder), None, f"cannot read: {error.strerror or error}"))

    bundles = []
    for root, folders, names in os.walk(folder, onerror=unlisted):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(names):
            file = Path(root) / name
            if name.startswith(".") or not name.endswith(".json"):
                continue
            if file.parent.name == RUNS or _looks_like_bundle(file):
                bundles.append(file)
            else:
                found.passed_over += 1
    return bundles


def _looks_like_bundle(file: Path) -> bool:
    """Whether a JSON file outside a runs folder reads as an object with a bundle's `id` and `engine`."""
    try:
        probe = msgspec.json.decode(read_bounded(file), type=_Probe)
    except (files.Unreadable, msgspec.DecodeError, RecursionError):
        return False
    return probe.id is not None and probe.engine is not None
