"""How Ctrl-C and SIGTERM stop the runner: as cancellation, so every `finally` runs and no signal is lost.

A batch scheduler cancelling a job sends SIGTERM, so SIGTERM stops the runner as Ctrl-C does.
A signal handler that raises KeyboardInterrupt can land anywhere, including inside a garbage
collector's finaliser, where Python prints it and carries on; the runner then measured on as if
never stopped. Inside the event loop the signal therefore only cancels the main task; the
KeyboardInterrupt comes after the coroutine has unwound.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_until_interrupted(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end; SIGINT or SIGTERM cancels it, then KeyboardInterrupt is raised."""
    return asyncio.run(_cancelled_by_signals(coroutine))


async def _cancelled_by_signals(coroutine: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    received: list[int] = []

    def stop(signum: int) -> None:
        received.append(signum)
        main.cancel()

    installed = []
    for which in STOPPING_SIGNALS:
        try:
            loop.add_signal_handler(which, stop, which)
        except (ValueError, RuntimeError):  # not the main thread: leave signals alone
            continue
        installed.append(which)
    try:
        return await coroutine
    except asyncio.CancelledError:
        if received:
            raise KeyboardInterrupt from None
        raise
    finally:
        for which in installed:
            loop.remove_signal_handler(which)


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """For code outside an event loop: while the block runs, SIGTERM raises KeyboardInterrupt as Ctrl-C does."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
