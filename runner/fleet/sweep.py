"""`runner sweep FILE`: every setup of a sweep file measured in turn on this machine, resumably.

A setup with a finished bundle is skipped, a half-finished one resumes from its journal, and a
failed one is tried again; one setup failing never stops the others. The summary says what
became of each, and the exit status is non-zero if any failed.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Literal, TextIO

import msgspec

from runner.bundle.terminal_text import printable
from runner.errors import JournalError, MeasureError
from runner.fleet.sweep_file import Setup
from runner.journal import Journal, journal_path
from runner.measure import measure
from runner.measurement import left_to_measure
from runner.plan import PlanSpec, estimate_seconds
from runner.progress import duration_text, on_terminal, reporter_for, typed_command

State = Literal["new", "partial", "finished"]


class Outcome(msgspec.Struct, kw_only=True):
    """What became of one setup: done, failed (and why), or skipped; with the seconds it took."""

    id: str
    result: Literal["done", "failed", "skipped"]
    reason: str = ""
    details: list[str] = []
    seconds: float = 0.0


def setup_state(setup: Setup) -> State:
    """Where a setup stands on disk: a finished bundle, a journal with items left, or nothing yet.

    A bundle with no journal beside it (written by hand or imported) counts as finished.
    """
    out = setup.options.out
    assert out is not None
    journal = journal_path(out)
    if journal.is_file() and journal.stat().st_size:
        return "finished" if not left_to_measure(Journal.load(journal, lock=False)) else "partial"
    return "finished" if out.exists() else "new"


def planned_seconds(setup: Setup) -> float | None:
    """The measuring time of a setup's plan, where its contexts are given (else the server decides them)."""
    options = setup.options
    if options.contexts is None:
        return None
    spec = PlanSpec(contexts=options.contexts, prefill_contexts=options.prefill_contexts or options.contexts,
                    concurrency=options.concurrency, duration=options.duration, max_output=options.max_output,
                    repeats=options.repeats)
    return estimate_seconds(spec)


class SweepClock:
    """Setup k of n, time elapsed, and the ETA from the plans (and the setups measured so far)."""

    def __init__(self, setups: list[Setup]) -> None:
        """Time the sweep of `setups` from now."""
        self.setups = setups
        self.started = time.monotonic()
        self.index = 0
        self.setup_started = self.started
        self.took: list[float] = []

    def begin(self, index: int) -> None:
        """Setup `index` (from 0) starts now."""
        self.index, self.setup_started = index, time.monotonic()

    def end(self) -> None:
        """The current setup is over (done or failed)."""
        self.took.append(time.monotonic() - self.setup_started)

    def eta(self) -> float | None:
        """Seconds left: each remaining setup's plan, or the mean of those measured when it has none."""
        guess = statistics.fmean(self.took) if self.took else None
        left = 0.0
        for number, setup in enumerate(self.setups[self.index:]):
            planned = planned_seconds(setup) or guess
            if planned is None:
                return None
            left += max(0.0, planned - (time.monotonic() - self.setup_started)) if number == 0 else planned
        return left

    def line(self) -> str:
        """`setup 2 of 3: qwen3-8b-h200-tp1 · 4 min elapsed · ETA 12 min`."""
        eta = self.eta()
        return (f"setup {self.index + 1} of {len(self.setups)}: {self.setups[self.index].id} · "
                f"{duration_text(time.monotonic() - self.started)} elapsed"
                + (f" · ETA {duration_text(eta)}" if eta is not None else ""))


async def run_sweep(setups: list[Setup], stream: TextIO | None = None) -> list[Outcome]:
    """Measure every setup in turn (skipping finished ones); the outcome of each."""
    stream = stream or sys.stderr
    clock = SweepClock(setups)
    outcomes = []
    for index, setup in enumerate(setups):
        clock.begin(index)
        outcomes.append(await _run_setup(setup, clock, stream))
    return outcomes


async def _run_setup(setup: Setup, clock: SweepClock, stream: TextIO) -> Outcome:
    """One setup: skipped, resumed or started afresh, and what became of it."""
    try:
        state = setup_state(setup)
    except JournalError as exc:
        return Outcome(id=setup.id, result="failed", reason=str(exc))
    if state == "finished":
        return Outcome(id=setup.id, result="skipped", reason="finished earlier")
    if not on_terminal(stream):
        print(f"== {clock.line()}{' (resuming)' if state == 'partial' else ''}", file=stream, flush=True)
    options = msgspec.structs.replace(setup.options, resume=state == "partial")
    try:
        await measure(options, progress=reporter_for(stream, banner=clock.line))
    except MeasureError as exc:
        clock.end()
        return Outcome(id=setup.id, result="failed", reason=str(exc), details=exc.details, seconds=clock.took[-1])
    clock.end()
    return Outcome(id=setup.id, result="done", reason=str(options.out), seconds=clock.took[-1])


def summary(outcomes: list[Outcome], file: Path) -> list[str]:
    """The summary lines: each setup's result and why, then the totals."""
    width = max(len(o.id) for o in outcomes)
    lines = [f"sweep {file}:"]
    for outcome in outcomes:
        took = f" ({duration_text(outcome.seconds)})" if outcome.seconds else ""
        lines.append(f"  {outcome.id:<{width}}  {outcome.result:<7}  {printable(outcome.reason, 1000)}{took}")
        lines += [f"      {printable(line, 500)}" for line in outcome.details]
    counts = {word: sum(o.result == word for o in outcomes) for word in ("done", "failed", "skipped")}
    lines.append(", ".join(f"{count} {word}" for word, count in counts.items()))
    return lines


def dry_run(setups: list[Setup]) -> list[str]:
    """What the sweep would do: each setup's command, GPUs, matrix, state and estimate; then the totals."""
    from runner.bundle.formats import context_label

    lines = []
    known = 0.0
    for setup in setups:
        options = setup.options
        contexts = ", ".join(map(context_label, options.contexts)) if options.contexts else "from the server's max length"
        planned = planned_seconds(setup)
        known += planned or 0.0
        lines += [
            f"{setup.id} · {setup.gpus} GPU{'s' if setup.gpus != 1 else ''} · {setup_state(setup)}",
            f"  serve:       {printable(options.serve or '')}",
            f"  contexts:    {contexts}",
            f"  concurrency: {', '.join(map(str, options.concurrency))} · {options.duration:g} s each"
            + (f" · {options.repeats} repeats" if options.repeats > 1 else ""),
            f"  estimate:    {duration_text(planned) if planned is not None else 'unknown until the server says its max length'}"
            " plus the server's start-up",
        ]
    lines.append(f"{len(setups)} setups, up to {max(s.gpus for s in setups)} GPUs each, "
                 f"about {duration_text(known)} of measuring plus each server's start-up")
    return lines


class SlurmSettings(msgspec.Struct, kw_only=True):
    """What `runner sweep --slurm` passes to sbatch."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None
    extra: list[str] = []


def sweep_main(file: Path, out_dir: Path, only: tuple[str, ...], dry: bool, slurm: SlurmSettings | None,
               argv: list[str]) -> int:
    """`runner sweep`: load the file, then a dry run, a local sweep or a Slurm one; the exit status."""
    from runner.bundle.error_lines import print_error
    from runner.errors import OptionError
    from runner.fleet.sweep_file import load_sweep
    from runner.interrupts import run_until_interrupted, sigterm_as_ctrl_c

    try:
        setups = load_sweep(file, out_dir)
        unknown = sorted(set(only) - {s.id for s in setups})
        if unknown:
            raise OptionError(f"{file}: --setup {unknown[0]}: no setup has that id")
        setups = [s for s in setups if not only or s.id in only]
        if dry:
            print("\n".join(dry_run(setups)))
            return 0
    except (OptionError, JournalError) as exc:
        print_error(str(exc))
        return 2
    try:
        if slurm is not None:
            from runner.fleet.slurm import run_on_slurm

            with sigterm_as_ctrl_c():
                outcomes = run_on_slurm(setups, file, out_dir, slurm)
        else:
            outcomes = run_until_interrupted(run_sweep(setups))
    except OptionError as exc:  # Slurm's commands missing or refusing
        print_error(str(exc))
        return 2
    except KeyboardInterrupt:
        print(file=sys.stderr)
        kept = ("the submitted jobs go on; follow them again" if slurm is not None
                else "the running server is stopped and finished cells are kept; resume the sweep")
        print_error(f"interrupted; {kept} with: {typed_command(argv)}")
        return 130
    print("\n".join(summary(outcomes, file)), file=sys.stderr)
    return 1 if any(o.result == "failed" for o in outcomes) else 0

