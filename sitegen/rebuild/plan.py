"""The incremental plan: what the previous build published, and what this build keeps, renders and drops.

Each output (a run's folder, a comparison page, a cache file) is declared with its inputs and keyed
by them (outputs.output_key); one whose key is the previous build's and whose files are whole in the
stage or the published site is not rendered again, and `finish` brings its files into the stage and
writes the manifest of the new site.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from sitegen.publish.layout import is_bookkeeping, state_file
from sitegen.publish.manifest import MANIFEST, MANIFEST_VERSION, Manifest, ManifestFile, Record, read_published
from sitegen.publish.stage import Stage
from sitegen.publish.stage_check import is_plain, plain_files
from sitegen.rebuild.outputs import Output, Shared, output_key


class Publication:
    """What the previous build published, and what this build keeps, renders and drops.

    An output is a folder (a name ending in "/") or a file. A keyed output is
    rendered only when its key differs from the previous build's, or a file of it is missing.
    The previous build is known from the state folder beside the site (`state`) while that is the
    state of the site in `out` (`trusted`, layout.describes); else nothing published is reused.
    """

    def __init__(self, out: Path, state: Path, record: Record | None = None, trusted: bool = True) -> None:
        self.out = out
        self.state = state
        # output -> (key, files); the site files' inodes as recorded
        self.old, recorded = read_published(state, record) if trusted else ({}, None)
        self.walked = bool(self.old) and recorded is None
        # The published files by inode: as recorded while the manifest is its build's own, else as they are now.
        if self.walked:
            listed = {f for _, files in self.old.values() for f in files if not is_bookkeeping(f)}
            recorded = {f: inode for f, inode in plain_files(out).items() if f in listed}
        self.published = recorded or {}
        self.outputs: Manifest = {}  # the new site's outputs (set by `finish`)
        self.inodes: dict[str, int] = {}  # the new site's files by inode (set by `finish`)
        self.keys: dict[str, str] = {}
        self.rendered: set[str] = set()
        self.shared: Shared | None = None  # what every output is made with (set by the build once it knows the pages)
        self.stage: Stage | None = None  # the stage this plan fills (set by `staged`)
        self.broken: set[str] | None = None  # with a checked stage, the outputs lacking a file in it (`lacking`)

    def kept_as_before(self, outputs: list[str]) -> set[str]:
        """Record for outputs of the site made from the same inputs as in the previous build that build's keys
        (in one pass: a rebuild keeps most of 25,000 so); returns those it did not leave whole, to be keyed
        again. Not for bookkeeping outputs, which are in the state folder, where the stage's check does not look."""
        kept = self.stage.kept if self.stage else {}
        published, broken, keys = self.old, self.broken, self.keys
        # As lacking found them, outputs are whole unless broken: known by set lookups, no call, for 25,000.
        whole = set() if broken is None else {o for o in outputs if o in published and o not in broken and published[o][1]}
        keys.update([(output, published[output][0]) for output in whole])
        again = set()
        for output in outputs:
            if output not in whole:
                old = published.get(output)
                if old is not None and old[1] and self._whole(output, old[1], kept):
                    keys[output] = old[0]
                else:
                    again.add(output)
        return again

    def forget(self, output: str) -> None:
        """Drop what the previous build published as `output` (found broken): it is made again, whatever its key."""
        self.old.pop(output, None)

    def unchanged(self, output: Output) -> bool:
        """Record an output's key, made from the inputs it declares; True when the published output is
        current and whole, so it need not be rendered.

        Whole: each of its files is in the stage already (a hard link of the published file), or is
        the published site's plain file of the inode the manifest records (not a link a planted
        symlink could pull something outside the site through, nor a file put in its place).
        """
        if self.shared is None:
            raise RuntimeError("the plan keys outputs only once the build has set what they share")
        path = output.path
        key = self.keys[path] = output_key(output, self.shared)
        old = self.old.get(path)
        if old is not None and old[0] == key and old[1] and self._whole(path, old[1], self.stage.kept if self.stage else {}):
            return True
        self.rendered.add(path)
        return False

    def lacking(self, missing: list[str]) -> None:
        """Note the published files a checked stage lacks: an output none of whose files is among them is
        whole in the stage, known without looking up its files (25,000 outputs, 65,000 files). Only where
        the record vouches for the manifest, whose files it then holds every one of (a walked site's
        files may not be all the manifest names)."""
        if not self.walked:
            self.broken = {f if f in self.old else _folder_output(f, self.old) or f for f in missing}

    def _in_stage(self, output: str, files: list[str], kept: dict[str, int]) -> bool:
        """Whether each of an output's files is in the stage (a bookkeeping output's: in the state folder,
        which the stage's check does not see)."""
        if self.broken is not None and not is_bookkeeping(output):
            return output not in self.broken
        return all(map(kept.__contains__, files))

    def _whole(self, output: str, files: list[str], kept: dict[str, int]) -> bool:
        """Whether each of an output's files is in the stage or published as recorded."""
        return self._in_stage(output, files, kept) or all(f in kept or self._plain(f) for f in files)

    def _plain(self, relative: str) -> bool:
        """Whether the published file is still the plain file the manifest records (or, walked, is there);
        a bookkeeping file, whether the state folder holds it as a plain file (the record names site files only)."""
        if is_bookkeeping(relative):
            return is_plain(state_file(self.state, relative))
        if self.walked:
            return relative in self.published
        return is_plain(f"{self.out}/{relative}", self.published[relative])

    def published_file(self, relative: str) -> Path:
        """Where a published file of the plan is: in the site, or a bookkeeping one in the state folder."""
        return Path(state_file(self.state, relative) if is_bookkeeping(relative) else f"{self.out}/{relative}")

    def add(self, stage: Stage, part: Recorded) -> None:
        """Take into the build's records what a part of it wrote and keyed apart (`recorded`)."""
        stage.written.update(part.written)
        stage.bookkeeping.update(filter(is_bookkeeping, part.written))
        self.keys.update(part.keys)
        self.rendered.update(part.rendered)

    @property
    def reused(self) -> int:
        return len(self.keys) - len(self.rendered & set(self.keys))

    def finish(self, stage: Stage) -> None:
        """Bring the reused outputs' files into the stage (those it lacks), remove the kept files the new
        site does not have, and write the manifest of the whole new site."""
        outputs: dict[str, tuple[str, list[str]]] = {}
        kept = stage.kept  # (the stage's own dict: its removals below show in it)
        for output, key in self.keys.items():
            if output not in self.rendered:
                files = self.old[output][1]
                if not self._in_stage(output, files, kept):
                    for relative in files:
                        if relative not in kept:
                            stage.reuse(relative, self.published_file(relative))
                outputs[output] = (key, files)
        written = stage.written
        for relative in sorted(written):
            # A file inside a keyed folder is that folder's, not an output of its own (by its parent
            # folders, looked up: matching every file against every folder grew as runs squared).
            output = relative if relative in self.keys else _folder_output(relative, self.keys) or relative
            outputs.setdefault(output, (self.keys.get(output, ""), []))[1].append(relative)
        for output, (_, files) in self.old.items():  # kept files of outputs rendered again or gone
            if output not in outputs or output in self.rendered:
                for relative in files:
                    if relative in kept and relative not in written:
                        stage.remove(relative)
        # Every file of the new site, by inode: the kept files left (the others were removed), then
        # those linked in and those written, which replace kept ones at their paths; not the bookkeeping.
        self.inodes = {**stage.kept, **stage.linked, **stage.written}
        for relative in stage.bookkeeping:
            self.inodes.pop(relative, None)  # (a kept one may have been removed)
        manifest = ManifestFile(MANIFEST_VERSION, dict(sorted(outputs.items())))
        stage.write(MANIFEST, msgspec.msgpack.encode(manifest))
        self.outputs = manifest.outputs


class Recorded(msgspec.Struct, array_like=True):
    """What a part of a build wrote and keyed, kept apart from the build's records: a forked process
    hands it back so (`recorded`, then `Publication.add`)."""

    written: dict[str, int]
    keys: dict[str, str]
    rendered: list[str]


def recorded(stage: Stage, plan: Publication, work: Callable[[], None]) -> Recorded:
    """Run `work` and return what it wrote into the stage and keyed in the plan, leaving the build's own records as they were."""
    saved = stage.written, plan.keys, plan.rendered
    stage.written, plan.keys, plan.rendered = {}, {}, set()
    try:
        work()
        return Recorded(stage.written, plan.keys, sorted(plan.rendered))
    finally:
        stage.written, plan.keys, plan.rendered = saved


def _folder_output(relative: str, outputs: dict[str, str]) -> str | None:
    """The folder output a file belongs to ("runs/x/" for "runs/x/index.html"), if any."""
    parts = relative.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth]) + "/"
        if folder in outputs:
            return folder
    return None


