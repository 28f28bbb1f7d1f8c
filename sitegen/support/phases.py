"""Where a build's time and memory go: wall and CPU seconds per phase, and the process's resident
memory as each phase ends, printed to stderr when SITEGEN_PHASES is set.

A diagnostic for measuring builds (`SITEGEN_PHASES=1 python3 -m sitegen build ...`); when the
variable is unset a phase costs one check.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENABLED = bool(os.environ.get("SITEGEN_PHASES"))
Timed = tuple[str, float, float, float]  # name, wall and CPU seconds, resident MB at its end
_TIMES: list[Timed] = []
_BESIDE: list[Timed] = []  # timed in other processes, alongside: not in this process's total
_NESTED: set[int] = set()  # the places in _TIMES of phases timed inside another (in its time already: not in the total)
_depth = 0


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as one phase of the build (only when SITEGEN_PHASES is set)."""
    if not ENABLED:
        yield
        return
    global _depth
    wall, cpu = time.perf_counter(), time.process_time()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth:
            _NESTED.add(len(_TIMES))
            name = f"  {name}"
        _TIMES.append((name, time.perf_counter() - wall, time.process_time() - cpu, resident_mb()))


def resident_mb() -> float:
    """This process's resident memory now, in MB (0 where /proc is not there to tell)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


def mark() -> int:
    """Where the phases timed so far end, for `taken`."""
    return len(_TIMES)


def taken(since: int) -> list[Timed]:
    """The phases timed since the mark, forgotten here (a forked process hands them to its parent)."""
    times = _TIMES[since:]
    del _TIMES[since:]
    return times


def add(times: list[Timed], where: str) -> None:
    """Phases timed in another process (`where`), to report after this one's."""
    _BESIDE.extend((f"{name} ({where})", wall, cpu, rss) for name, wall, cpu, rss in times)


def report() -> None:
    """Print the phases timed so far, one line each, and forget them."""
    if not ENABLED:
        return
    outer = [t for i, t in enumerate(_TIMES) if i not in _NESTED]
    total = ("total", sum(t[1] for t in outer), sum(t[2] for t in outer), max((t[3] for t in _TIMES), default=0.0))
    for name, wall, cpu, rss in _TIMES + [total] + _BESIDE:
        print(f"phase {name:<22}{wall * 1000:9.1f} ms wall {cpu * 1000:9.1f} ms CPU {rss:7.0f} MB resident", file=sys.stderr)
    _TIMES.clear()
    _BESIDE.clear()
    _NESTED.clear()
