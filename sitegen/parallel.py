"""Work spread over forked processes, one per core.

Forked workers inherit the parent's memory (the run records, the templates, the renderer), so
only each task's small arguments and results travel between processes. Below PARALLEL_MIN
tasks, or where fork is not available, the work stays in this process: starting workers costs more.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN = 64

_FUNCTION: Callable | None = None  # what a forked worker calls, inherited rather than pickled


def _call(item: object) -> object:
    assert _FUNCTION is not None
    return _FUNCTION(item)


def cpu_count() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def fork_map(function: Callable[[T], R], items: list[T], jobs: int, chunksize: int, ordered: bool = True) -> Iterator[R]:
    """function(item) for each item, across `jobs` forked workers taking `chunksize` items at a time;
    results in the items' order, or as they finish when not `ordered`."""
    global _FUNCTION
    if jobs <= 1 or len(items) < PARALLEL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(function, items)
        return
    _FUNCTION = function
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results: Iterable = (pool.imap if ordered else pool.imap_unordered)(_call, items, chunksize=chunksize)
            yield from results
    finally:
        _FUNCTION = None
