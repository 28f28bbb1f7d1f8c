"""The runner's scheduling priority, raised while it measures.

A client that waits for the CPU reads tokens late: on a busy machine the simulator's token log
shows TTFT read late and cells Distorted at the default priority, far less so at nice -10
(benchmarks/accuracy.py; figures in benchmarks/HISTORY.md). The runner mostly sleeps on its
sockets, so a higher priority costs the server next to nothing and lets the client take its
timestamps when the bytes arrive.

A thread's nice value orders it only against threads of its own session, where Linux
schedules by autogroup (sched_autogroup_enabled, the default on desktop and server kernels):
sessions share the CPU between them by their autogroup's nice value first. A server started
from another terminal or as a service is another session, so the runner raises its session's
autogroup too. Against a real vLLM busy on every core, the runner's thread at nice -10 alone
spent most of each window waiting for a CPU, and its loop lagged; with its autogroup at -10 as
well, it seldom waited.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

# Ahead of ordinary work (nice 0) by a factor of about ten in the kernel's CPU shares, short of
# the real-time classes, which could starve the server the runner measures.
RAISED_NICE = -10
# This process's autogroup and its nice value ("/autogroup-12 nice 0"); absent on kernels without it.
AUTOGROUP = Path("/proc/self/autogroup")
AUTOGROUP_WRITE_GAP_S = 0.11


def current_nice() -> int:
    """This thread's nice value (Linux keeps one per thread; the runner's loop runs in one)."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def session_nice() -> int | None:
    """The nice value of this process's autogroup (its session's share against other sessions); None without one."""
    try:
        return int(AUTOGROUP.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def _set_session_nice(nice: int) -> None:
    """Set the autogroup's nice value where the kernel permits it (CAP_SYS_NICE to raise).

    Without CAP_SYS_ADMIN the kernel takes one such write per AUTOGROUP_WRITE_GAP_S and answers
    others with EAGAIN: one retry after the gap, so that a short run still gives the value back.
    """
    for retry in (False, True):
        try:
            AUTOGROUP.write_text(str(nice))
            return
        except BlockingIOError:
            if not retry:
                time.sleep(AUTOGROUP_WRITE_GAP_S)
        except OSError:
            return


def guard(nice: int) -> None:
    """In the guard process: wait until the runner closes the pipe or dies, then put the session's nice value back.

    A runner killed outright (SIGKILL) cannot give back what it raised, and the autogroup is its
    whole session's, the user's terminal included. The guard shares that session and outlives it.
    """
    sys.stdin.buffer.read()
    if session_nice() != nice:
        _set_session_nice(nice)


def _start_guard(nice: int) -> subprocess.Popen | None:
    """A guard process (guard) that gives the session back `nice` however the runner ends; None if it cannot start.

    It runs in a process group of its own, so that the terminal's Ctrl-C, which stops the runner,
    does not stop it first.
    """
    code = "import sys; sys.path.insert(0, sys.argv[1]); from runner.priority import guard; guard(int(sys.argv[2]))"
    try:
        return subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).resolve().parents[1]), str(nice)],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                process_group=0)
    except OSError:
        return None


@contextlib.contextmanager
def raised_priority() -> Iterator[int]:
    """Run the block at RAISED_NICE, thread and session, where the system allows it; put the old values back after.

    Yields the thread's nice value the block runs at: unchanged where raising it is not permitted
    (an unprivileged user without an RLIMIT_NICE allowance), which the bundle then records. The
    session's value is raised and given back alongside it, where there is one and it is permitted.
    """
    before, session_before = current_nice(), session_nice()
    if before > RAISED_NICE:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, RAISED_NICE)
    guard_process = None
    if session_before is not None and session_before > RAISED_NICE:
        _set_session_nice(RAISED_NICE)
        if session_nice() != session_before:
            guard_process = _start_guard(session_before)
    try:
        yield current_nice()
    finally:
        if current_nice() != before:  # lowering one's own priority is always permitted
            os.setpriority(os.PRIO_PROCESS, 0, before)
        if session_before is not None and session_nice() != session_before:
            _set_session_nice(session_before)
        if guard_process is not None:
            guard_process.stdin.close()
            guard_process.wait()
