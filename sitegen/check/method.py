"""Method compliance: a run measured as it says it was.

- windows: every window at least as long as `run.seconds_per_measurement`;
- max output: no window counts more tokens than its requests may give, `run.max_output_tokens`
  each (the records' requests are held to it one by one, in recompute.py);
- prompt mode: `run.prefill_mode` says whether prompts were warmed before TTFT was timed, which
  decides what a run's TTFT means.
"""

from __future__ import annotations

from runner.bundle.display import has_value, prefill_has_value
from runner.bundle.schema import Bundle
from sitegen.check.consistency import Found
from sitegen.check.fields import oversized, windows
from sitegen.check.tolerances import for_window

# Windows are stored in whole microseconds.
MICROSECOND = 1e-6


def method_problems(bundle: Bundle) -> Found:
    """Every way the bundle's windows or settings fall short of the method it states."""
    found: Found = []
    asked, most = bundle.run.seconds_per_measurement, bundle.run.max_output_tokens
    for window in windows(bundle):
        cell = window.cell
        if oversized(cell):
            continue
        if asked and cell.measured_s is not None:
            shortest = asked * (1 - for_window(bundle, cell).window_shortfall) - MICROSECOND
            if cell.measured_s < shortest:
                found.append((f"{window.where}.measured_s", f"a {cell.measured_s:g} s window, shorter than the "
                                                            f"{asked:g} s per measurement the run states"))
        if most and cell.output_tokens is not None and cell.completed is not None:
            allowed = (cell.completed + cell.concurrency) * most
            if cell.output_tokens > allowed:
                found.append((f"{window.where}.output_tokens", f"{cell.output_tokens:,} tokens from {cell.completed} "
                                                               f"finished and at most {cell.concurrency} running requests: "
                                                               f"more than {most:,} each allows"))
    measured = any(map(has_value, bundle.decode)) or any(map(prefill_has_value, bundle.prefill))
    if measured and not bundle.run.prefill_mode:
        found.append(("$.run.prefill_mode", "the prompt mode is not recorded: whether prompts were warmed before TTFT was timed"))
    return found
