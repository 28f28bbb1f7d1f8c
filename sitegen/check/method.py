"""Method compliance: a run measured as it says it was.

- windows: every window at least as long as `run.seconds_per_measurement`;
- max output: no window counts more tokens than its requests may give, `run.max_output_tokens`
  each (the records' requests are held to it one by one, in recompute.py);
- prompt mode: `run.prefill_mode` says whether prompts were warmed before TTFT was timed, which
  decides what a run's TTFT means.
"""

from __future__ import annotations

from runner.bundle.display import has_value, prefill_has_value
from runner.bundle.schema import Bundle, DecodeCell, RunInfo
from sitegen.check.fields import Found
from sitegen.check.tolerances import Tolerances

# Windows are stored in whole microseconds.
MICROSECOND = 1e-6


def window_problems(cell: DecodeCell, run: RunInfo, allowed: Tolerances) -> Found:
    """How a window falls short of the method its run states (by field): shorter than asked, or more
    tokens than its requests' max output gives."""
    found: Found = []
    asked, most = run.seconds_per_measurement, run.max_output_tokens
    if asked and cell.measured_s is not None and cell.measured_s < asked * (1 - allowed.window_shortfall) - MICROSECOND:
        found.append(("measured_s", f"a {cell.measured_s:g} s window, shorter than the {asked:g} s per measurement the run states"))
    if most and cell.output_tokens is not None and cell.completed is not None:
        allowed_tokens = (cell.completed + cell.concurrency) * most
        if cell.output_tokens > allowed_tokens:
            found.append(("output_tokens", f"{cell.output_tokens:,} tokens from {cell.completed} finished and at most "
                                           f"{cell.concurrency} running requests: more than {most:,} each allows"))
    return found


def prompt_mode_problems(bundle: Bundle) -> Found:
    """A measured run that does not record its prompt mode."""
    measured = any(map(has_value, bundle.decode)) or any(map(prefill_has_value, bundle.prefill))
    if measured and not bundle.run.prefill_mode:
        return [("$.run.prefill_mode", "the prompt mode is not recorded: whether prompts were warmed before TTFT was timed")]
    return []
