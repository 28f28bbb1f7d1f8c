"""Work spread over forked processes: a pool of workers, one per core, or one call beside the build.

Forked processes inherit the parent's memory (the run records, the templates, the renderer), so
only each task's small arguments and results travel between processes. Below PARALLEL_MIN
tasks, or where fork is not available, the work stays in this process: starting workers costs more.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN = 64
SHARES = 4  # near the end, a batch is at most 1 / (jobs * SHARES) of the items left
SMALLEST = 16  # the smallest batch (unless the caller asks for smaller ones)

_FUNCTION: Callable | None = None  # what a forked worker calls, inherited rather than pickled


def _call(batch: list) -> list:
    assert _FUNCTION is not None
    return [_FUNCTION(item) for item in batch]


def cpu_count() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def fork_map(function: Callable[[T], R], items: list[T], jobs: int, batch: int, ordered: bool = True,
             meanwhile: Callable[[], None] = lambda: None) -> Iterator[R]:
    """function(item) for each item, across `jobs` forked workers taking consecutive items, at most
    `batch` at a time (batches); results in the items' order, or as they finish when not `ordered`.
    `meanwhile()` runs in this process once the workers have started (before the first result is
    taken), or first without them."""
    global _FUNCTION
    if jobs <= 1 or len(items) < PARALLEL_MIN or not _can_fork():
        meanwhile()
        yield from map(function, items)
        return
    import multiprocessing

    _FUNCTION = function
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results: Iterable = (pool.imap if ordered else pool.imap_unordered)(_call, batches(items, jobs, batch))
            meanwhile()
            for done in results:
                yield from done
    finally:
        _FUNCTION = None


def batches(items: list[T], jobs: int, largest: int) -> list[list[T]]:
    """The items in consecutive batches of `largest`, shrinking near the end to a share of what is left
    (down to SMALLEST): few batches, so that consecutive items stay together in one worker, and small
    last ones, so that the workers finish together."""
    found = []
    start = 0
    while start < len(items):
        size = max(min(largest, (len(items) - start) // (jobs * SHARES)), min(SMALLEST, largest))
        found.append(items[start:start + size])
        start += size
    return found


def _can_fork() -> bool:
    """Whether multiprocessing can fork here; asked only with work enough for a pool: a rebuild after
    one bundle changed (a few tasks) need not pay for importing it."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


class Beside:
    """`function()` run in a forked process while this one goes on; `result()` waits for the bytes it
    returns, or raises again what it raised. Runs in this process without `fork`, or where fork is not available."""

    def __init__(self, function: Callable[[], bytes], fork: bool = True) -> None:
        self.pid = 0
        if not fork or not hasattr(os, "fork"):
            self._outcome = _outcome(function)
            return
        self._reader, writer = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the call: it answers through the pipe and ends without the parent's clean-up
            try:
                os.close(self._reader)
                done, value = _outcome(function)
                with open(writer, "wb") as pipe:
                    pipe.write(b"+" + value if done else b"!" + _pickled(value))
            finally:
                os._exit(0)
        os.close(writer)

    def result(self) -> bytes:
        """What the call returned; what it raised is raised here."""
        if self.pid:
            with open(self._reader, "rb") as pipe:
                data = pipe.read()
            os.waitpid(self.pid, 0)
            self.pid = 0
            if data[:1] == b"+":
                self._outcome = (True, data[1:])
            else:
                self._outcome = (False, _unpickled(data[1:]) if data else RuntimeError("a forked process ended without its result"))
        done, value = self._outcome
        if not done:
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """End the call if it still runs (the build failed before it needed the result)."""
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            os.close(self._reader)
            self.pid = 0


def _outcome(function: Callable[[], bytes]) -> tuple[bool, object]:
    """(True, what function() returned) or (False, the exception it raised)."""
    try:
        return True, function()
    except BaseException as exc:  # noqa: BLE001  (raised again in the parent, whatever it is)
        return False, exc


def _unpickled(data: bytes) -> BaseException:
    """The exception a forked process sent, or a RuntimeError saying it could not be made again here."""
    try:
        return pickle.loads(data)
    except Exception as exc:  # noqa: BLE001
        return RuntimeError(f"a forked process failed, and its error could not be read: {exc!r}")


def _pickled(exc: object) -> bytes:
    """The exception as pickle, or a RuntimeError naming it where it cannot be pickled."""
    try:
        return pickle.dumps(exc)
    except Exception:  # noqa: BLE001
        return pickle.dumps(RuntimeError(repr(exc)))
