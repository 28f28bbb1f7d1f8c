"""The file system's state, which a build benchmark must not time: creating files right after deleting many.

ext4 mounted without a journal (as this project's development machines are: /proc/fs/jbd2 is empty)
will not reuse an inode for a minute after it was freed (six while its inode table block is dirty),
and each new file's inode search steps over every such inode (`recently_deleted` in the kernel's
ialloc.c). Right after a 10,000-run site (65,000 files) is deleted, each file created costs many
times its usual system time: a cold build timed then measures the deletion, not the build (the
figures are in benchmarks/HISTORY.md). So a benchmark deletes nothing it made until its last timed
build (`Trash`), and waits for the disk to settle before timing (`settle`).
In a journalled ext4 (the usual mount) the kernel skips this check and such waits cost nothing.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

PROBE_FILES = 300
SETTLED_US = 80.0  # above a file's creation on a settled disk, far below it after a mass delete
MAX_WAIT_S = 420.0  # the kernel's longest wait (six minutes) and a probe's margin


def creation_us(folder: Path) -> float:
    """Wall microseconds to create and write one 20 KB file (a run page's size), over PROBE_FILES in
    a new folder of `folder`; the folder is left for Trash, as deleting it would unsettle the disk."""
    probe = folder / f".probe-{time.monotonic_ns()}"
    probe.mkdir(parents=True)
    data = b"x" * 20_000
    started = time.perf_counter()
    for i in range(PROBE_FILES):
        fd = os.open(probe / str(i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.close(fd)
    return (time.perf_counter() - started) * 1e6 / PROBE_FILES


def settle(folder: Path) -> str:
    """Wait until creating a file in `folder` costs what it does on a settled disk (at most MAX_WAIT_S),
    the data written before (the synthesized bundles) flushed first so that its write-back does not
    overlap the timings; returns a line saying what was found, for the benchmark's report."""
    started = time.monotonic()
    os.sync()
    cost = creation_us(folder)
    while cost > SETTLED_US and time.monotonic() - started < MAX_WAIT_S:
        time.sleep(15)
        cost = creation_us(folder)
    waited = time.monotonic() - started
    state = "settled" if cost <= SETTLED_US else f"NOT settled after {waited:.0f} s (timings below include it)"
    return f"file creation before the timed builds: {cost:.0f} µs a file, {state}, waited {waited:.0f} s"


def warm(folder: Path) -> None:
    """Read every file under `folder` (the synthesized content) so that the timed builds find it in the
    page cache, as a build after the runs were written or a previous build does, rather than on disk."""
    for path in folder.rglob("*"):
        if path.is_file():
            path.read_bytes()


class Trash:
    """Folders a benchmark is done with, moved aside and deleted only when it ends (after its last timed build)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / ".trash"
        self.count = 0

    def put(self, path: Path) -> None:
        """Move `path` (a file or folder, if it exists) out of the way, to delete later."""
        if path.exists() or path.is_symlink():
            self.folder.mkdir(parents=True, exist_ok=True)
            self.count += 1
            os.replace(path, self.folder / f"{self.count}-{path.name}")

    def empty(self) -> None:
        """Delete everything put here, and the probes' folders."""
        shutil.rmtree(self.folder, ignore_errors=True)
        for probe in self.folder.parent.glob(".probe-*"):
            shutil.rmtree(probe, ignore_errors=True)
