"""The runner's scheduling priority, raised while it measures.

A client that waits for the CPU reads tokens late: on a two-core machine with six busy
processes the simulator's token log showed TTFT read 13–37 ms late and three cells in seven
Distorted at the default priority, against 5 ms and none at nice -10 in the same session
(benchmarks/accuracy.py). The runner mostly sleeps on its sockets, so a higher priority costs
the server next to nothing and lets the client take its timestamps when the bytes arrive.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# Ahead of ordinary work (nice 0) by a factor of about ten in the kernel's CPU shares, short of
# the real-time classes, which could starve the server the runner measures.
RAISED_NICE = -10


def current_nice() -> int:
    """This thread's nice value (Linux keeps one per thread; the runner's loop runs in one)."""
    return os.getpriority(os.PRIO_PROCESS, 0)


@contextlib.contextmanager
def raised_priority() -> Iterator[int]:
    """Run the block at RAISED_NICE where the system allows it, and put the old priority back after.

    Yields the nice value the block runs at: unchanged where raising it is not permitted (an
    unprivileged user without an RLIMIT_NICE allowance), which the bundle then records.
    """
    before = current_nice()
    if before > RAISED_NICE:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, RAISED_NICE)
    try:
        yield current_nice()
    finally:
        if current_nice() != before:  # lowering one's own priority is always permitted
            os.setpriority(os.PRIO_PROCESS, 0, before)
