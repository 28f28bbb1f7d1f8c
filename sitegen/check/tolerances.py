"""How far a record's figures may stray from the relations between them, and which records hold them exactly.

The runner computes a window's figures from its requests' records in one function
(runner.bundle.records.window_figures) and stores them at full precision, so some relations hold
to the last bits of a float. Pages and other tools print rounded figures and time their windows
their own way; their relations hold only as closely as the seed pages and the peer tools' files
in tests/fixtures/ show.
"""

from __future__ import annotations

import msgspec

from runner.bundle.schema import Bundle, DecodeCell

# runner/metadata.py names the runner so in every bundle it writes ("speed-matrix runner v1.2.3").
RUNNER_TOOL = "speed-matrix runner"
# Float rounding: the most a relation that holds exactly may be off after a few operations on floats.
FLOAT_SLACK = 1e-9


class Tolerances(msgspec.Struct, frozen=True, kw_only=True):
    """What each relation of consistency.py allows."""

    output: float  # |output tokens − total tok/s × measured for|, as a share of output tokens …
    output_tokens: float  # … plus this many tokens
    prefill: float  # |prompt tok/s × TTFT − prompt tokens|, as a share of prompt tokens …
    prefill_ttft_ms: float  # … plus the tokens this many ms of TTFT would prefill
    window_shortfall: float  # how much shorter than run.seconds_per_measurement a window may be, as a share
    gap_floor: float  # per-request tok/s × time between tokens (ms ÷ 1000) is at least this …
    gap_ceiling: float  # … and at most this, times the tokens an engine step may yield
    active_factor: float  # total tok/s and average active × per-request tok/s are at most this many times apart


# A window the runner measured: output tokens = total × measured for, prompt tok/s = prompt tokens
# ÷ TTFT, and the window never ends before its time, to float rounding; the median rate is at least
# 1 ÷ the median gap (the same request's for an odd count, the mean of two for an even one). Rates
# of a window's requests may differ widely on a loaded machine (two requests of one vLLM window at 101
# and 209 tok/s): the mean of the two middle ones may then exceed 1 ÷ the mean of their gaps (1.14
# times there; up to 2 times for rates 5.8 times apart), and the median the time-weighted mean (0.80).
WINDOW = Tolerances(output=FLOAT_SLACK, output_tokens=0, prefill=FLOAT_SLACK, prefill_ttft_ms=0,
                    window_shortfall=FLOAT_SLACK, gap_floor=1 - FLOAT_SLACK, gap_ceiling=2.0, active_factor=3.0)
# Figures from a page or another tool:
# - output: AIPerf divides its output tokens by a span up to 6 % longer than its benchmark duration,
#   and pages print total tok/s to 0.1 (a 2.3 tok/s cell over 29.7 s is off by 1.3 tokens);
# - prefill: pages print prompt tok/s to three significant digits and TTFT to whole ms;
# - windows: llm-inference-bench's windows at a million tokens of context end up to 6.4 % short of the 30 s asked;
# - gaps: vLLM, GuideLLM and AIPerf take the time between chunks, which may carry several tokens, so no
#   floor; pages print per-request tok/s × TBT within 1.2 % of 1, the peer tools within 1 %;
# - active: a median rate against the mean, each request's first token counted in the total only;
#   the seed pages stay within 1.1 times.
REPORTED = Tolerances(output=0.1, output_tokens=2, prefill=0.01, prefill_ttft_ms=0.5, window_shortfall=0.1,
                      gap_floor=0.0, gap_ceiling=1.25, active_factor=1.5)
# A prefill point without its prompt tokens is judged by its context: tools' prompts run a few percent
# over their nominal length (llm-inference-bench's 1,024-token prompt is 1,085 tokens).
CONTEXT_AS_PROMPT = 0.1
# A run's start and its windows' starts are read from the same wall clock; this covers its steps.
CLOCK_SLACK_S = 1.0
# A window's TTFT against the run's cold prefill at its context: a request may queue behind every
# other one sent at once, each prefilling while the others decode. In the seed pages and the peer
# tools' files a window's TTFT, to its p99, stays within 0.24 times the cold prefill per request at
# once (prefix caches make most far shorter), so 10 times leaves room for an engine without a cache.
TTFT_QUEUE = 10


def measured_by_runner(bundle: Bundle) -> bool:
    """Whether the runner measured this bundle (rather than a page or another tool reporting it)."""
    return (bundle.run.benchmark_tool or "").startswith(RUNNER_TOOL)


def for_window(by_runner: bool, cell: DecodeCell) -> Tolerances:
    """WINDOW for a window the runner measured (`by_runner`: measured_by_runner) and stored whole (it
    records when each began), else REPORTED."""
    return WINDOW if by_runner and cell.window_started_at is not msgspec.UNSET else REPORTED


def tokens_per_step(bundle: Bundle) -> int:
    """The most tokens one engine step may give a request: one, and the drafted ones under speculative decoding."""
    drafted = bundle.engine.speculative_tokens
    return 1 + (drafted if isinstance(drafted, int) else 0)
