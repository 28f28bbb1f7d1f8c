"""The build's progress line: drawn on a terminal only, after a delay, with pages done, total and ETA."""

from __future__ import annotations

import io

from sitegen.support.progress import DELAY, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_phase_shows_done_of_total_and_time_left_then_erases_itself() -> None:
    screen, clock = Terminal(), Clock()
    progress = Progress(screen, clock)
    progress.start("rendering pages", 1000)
    clock.now += DELAY + 1
    progress.advance(250)
    assert screen.getvalue().endswith("rendering pages 250 of 1,000 (25%), about 6 s left")
    assert screen.getvalue().startswith("\r")
    progress.close()
    assert screen.getvalue().endswith("\r\x1b[2K")


def test_a_short_build_draws_nothing() -> None:
    screen = Terminal()
    progress = Progress.for_terminal(screen)
    progress.start("rendering pages", 3)
    progress.advance(3)
    progress.close()
    assert screen.getvalue() == ""


def test_a_pipe_gets_no_progress_whatever_the_length() -> None:
    pipe, clock = io.StringIO(), Clock()
    progress = Progress.for_terminal(pipe)
    progress.clock = clock
    progress.start("rendering pages", 10)
    clock.now += 60
    progress.advance(5)
    progress.close()
    assert pipe.getvalue() == ""
