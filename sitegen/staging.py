"""Atomic builds: render into a fresh folder beside the site, publish only when all of it succeeded.

A build that fails leaves the previous site exactly as it was. A first build
(or one after the site lost its manifest) swaps the whole folder in with one
rename. A later build stages only the outputs whose inputs changed, then
moves each of them into place with a rename and removes outputs that are gone.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sitegen.errors import InputError

MANIFEST = ".build-manifest.json"


class Stage:
    """A folder being filled with the next site; refuses paths that leave it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.written: list[str] = []

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
        self.written.append(relative)

    def copy(self, relative: str, source: Path) -> None:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        self.written.append(relative)


class Publication:
    """What the previous build published, and what this build keeps, renders and drops.

    An output is a folder (a name ending in "/") or a file. A keyed output is
    rendered only when its key differs from the previous build's.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.old: dict[str, str] = _read_manifest(out)
        self.keys: dict[str, str] = {}
        self.rendered: set[str] = set()

    @property
    def incremental(self) -> bool:
        """Whether the previous site can be updated in place: it has a manifest of its outputs."""
        return bool(self.old)

    def unchanged(self, output: str, key: str) -> bool:
        """Record an output's key; True when the published one is current and need not be rendered."""
        self.keys[output] = key
        if self.incremental and self.old.get(output) == key and (self.out / output).exists():
            return True
        self.rendered.add(output)
        return False

    @property
    def reused(self) -> int:
        return len(self.keys) - len(self.rendered & set(self.keys))

    def outputs(self, stage: Stage) -> dict[str, str]:
        """Every output of this build: keyed ones, and each other file written (with an empty key)."""
        folders = tuple(k for k in self.keys if k.endswith("/"))
        loose = {path: "" for path in stage.written if path not in self.keys and not path.startswith(folders)}
        return {**self.keys, **loose}


def check_output(out: Path, sources: list[Path]) -> None:
    """Refuse an output folder that a build would destroy something in.

    A build replaces its output folder whole, so it must be empty or a site
    sitegen built (it has a manifest), and it must not hold or sit in an input.
    """
    if out.exists() and not out.is_dir():
        raise InputError(out, None, "the output path exists and is not a folder")
    for source in sources:
        source = source.resolve()
        if out == source or out in source.parents or source in out.parents:
            raise InputError(out, None, f"the output folder overlaps the input folder {source}; choose another --out")
    if out.is_dir() and not (out / MANIFEST).is_file() and any(out.iterdir()):
        raise InputError(out, None, f"refusing to replace a folder that sitegen did not build (no {MANIFEST}); empty it or choose another --out")


@contextmanager
def staged(out: Path, sources: list[Path]) -> Iterator[tuple[Stage, Publication]]:
    """Yield a stage and the publication plan; publish on success, discard on any error."""
    out = out.resolve()
    check_output(out, sources)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-build-", dir=out.parent))
    publication = Publication(out)
    try:
        stage = Stage(tmp)
        yield stage, publication
        outputs = publication.outputs(stage)
        if publication.incremental:
            _apply(stage, publication, outputs)
        else:
            _swap(stage, out, outputs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _swap(stage: Stage, out: Path, outputs: dict[str, str]) -> None:
    """Replace the whole output folder with the stage in one rename."""
    stage.root.joinpath(MANIFEST).write_text(json.dumps(outputs, sort_keys=True, indent=0))
    os.chmod(stage.root, 0o755)
    old = out.parent / f".{out.name}-old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)
    os.replace(stage.root, out)
    shutil.rmtree(old, ignore_errors=True)


def _apply(stage: Stage, publication: Publication, outputs: dict[str, str]) -> None:
    """Move each rendered output into the site and delete outputs this build no longer has.

    The manifest is removed first and written last, so an interrupted apply
    makes the next build a full one.
    """
    out = publication.out
    (out / MANIFEST).unlink(missing_ok=True)
    for output in sorted(outputs):
        if output in publication.keys and output not in publication.rendered:
            continue
        _replace(stage.root / output, out / output)
    for gone in sorted(set(publication.old) - set(outputs)):
        _remove(out, gone)
    (out / MANIFEST).write_text(json.dumps(outputs, sort_keys=True, indent=0))


def _replace(source: Path, target: Path) -> None:
    """Put a staged file or folder in place of the published one with renames."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir() and target.exists():
        aside = target.with_name(f".{target.name}-old-{os.getpid()}")
        os.replace(target, aside)
        os.replace(source, target)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(source, target)


def _remove(out: Path, output: str) -> None:
    """Delete an output the site no longer has, and the folders it leaves empty (never `out`)."""
    path = out / output
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    parent = path.parent
    while parent != out and out in parent.parents and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def _read_manifest(out: Path) -> dict[str, str]:
    """The previous build's outputs; entries that would leave the output folder are dropped."""
    try:
        found = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str) and _inside(k)}


def _inside(relative: str) -> bool:
    """Whether a manifest path names something strictly inside the output folder.

    Checked as text (no "..", not absolute): cheap for thousands of entries, and
    deleting through a planted symlink is already prevented by rmtree and unlink.
    """
    if not relative or "\\" in relative or os.path.isabs(relative):
        return False
    parts = Path(relative).parts
    return bool(parts) and ".." not in parts and parts[0] != "."
