"""Ctrl-C and SIGTERM stop a running coroutine through its `finally` blocks, however busy it is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# A coroutine that spends nearly all its time in finalisers (an object's __del__), where a
# KeyboardInterrupt raised by a signal handler is printed and dropped by Python, and the run
# would go on as if never stopped.
BUSY_IN_FINALISERS = textwrap.dedent("""
    import asyncio, sys, time
    from runner.interrupts import run_until_interrupted

    class Slow:
        def __del__(self):
            time.sleep(0.002)

    async def work():
        try:
            print("started", flush=True)
            while True:
                Slow()
                await asyncio.sleep(0)
        finally:
            print("finally ran", flush=True)

    try:
        run_until_interrupted(work())
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
""")


@pytest.mark.parametrize("which", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_cancels_the_run_even_inside_finalisers(which: signal.Signals) -> None:
    for attempt in range(5):
        process = subprocess.Popen([sys.executable, "-c", BUSY_IN_FINALISERS], stdout=subprocess.PIPE, text=True,
                                   stderr=subprocess.PIPE)
        assert process.stdout is not None
        assert process.stdout.readline() == "started\n"
        time.sleep(0.2 + 0.1 * attempt)
        os.kill(process.pid, which)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"still running 30 s after {which.name} (attempt {attempt + 1})")
        assert (process.returncode, out) == (130, "finally ran\ninterrupted\n"), err
        assert "Exception ignored" not in err


def test_a_run_that_ends_on_its_own_returns_its_value_and_leaves_the_handlers_as_they_were() -> None:
    import asyncio

    from runner.interrupts import run_until_interrupted

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    before = [signal.getsignal(which) for which in (signal.SIGINT, signal.SIGTERM)]
    assert run_until_interrupted(answer()) == 42
    assert [signal.getsignal(which) for which in (signal.SIGINT, signal.SIGTERM)] == before
