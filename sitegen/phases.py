"""Where a build's time goes: wall and CPU seconds per phase, printed to stderr when SITEGEN_PHASES is set.

A diagnostic for measuring rebuilds (`SITEGEN_PHASES=1 python3 -m sitegen build ...`); when the
variable is unset a phase costs one check.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENABLED = bool(os.environ.get("SITEGEN_PHASES"))
_TIMES: list[tuple[str, float, float]] = []


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as one phase of the build (only when SITEGEN_PHASES is set)."""
    if not ENABLED:
        yield
        return
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        _TIMES.append((name, time.perf_counter() - wall, time.process_time() - cpu))


def report() -> None:
    """Print the phases timed so far, one line each, and forget them."""
    if not ENABLED:
        return
    for name, wall, cpu in _TIMES:
        print(f"phase {name:<22}{wall * 1000:9.1f} ms wall {cpu * 1000:9.1f} ms CPU", file=sys.stderr)
    print(f"phase {'total':<22}{sum(t[1] for t in _TIMES) * 1000:9.1f} ms wall {sum(t[2] for t in _TIMES) * 1000:9.1f} ms CPU", file=sys.stderr)
    _TIMES.clear()
