"""Fault injection: what can go wrong, and when it is due.

Faults live in one Struct that SimConfig carries and that SimServer.set_faults or
`POST /_sim/faults` replaces at runtime. Counters and timers start when the
faults are set (or when the server starts, for the configured ones).
"""

from __future__ import annotations

import random
from typing import Annotated

import msgspec

ErrorStatus = Annotated[int, msgspec.Meta(ge=400, le=599)]
Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]
TokenCount = Annotated[int, msgspec.Meta(ge=0)]

MALFORMED_EVENT = b'data: {"id": "cmpl-broken", "choices": [{"text": \n\n'


class Faults(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """Fault switches; the defaults mean a healthy server, and a misspelled switch is an error."""

    # The next `error_next` generation requests get `error_status` instead of an answer.
    error_next: TokenCount = 0
    # Each generation request gets `error_status` with this probability (seeded, reproducible).
    error_fraction: Fraction = 0.0
    error_status: ErrorStatus = 503
    # A stream is cut with a TCP reset once it has sent this many tokens.
    reset_after_tokens: TokenCount | None = None
    # A stream sends nothing for `stall_s` seconds, once, after this many tokens.
    stall_after_tokens: TokenCount | None = None
    stall_s: Seconds = 0.0
    # During that stall, an SSE comment (": keepalive") every this many seconds, as proxies send.
    stall_keepalive_s: Annotated[float, msgspec.Meta(gt=0)] | None = None
    # Every n-th SSE event of a stream is preceded by a line that is not valid JSON.
    malformed_every: Annotated[int, msgspec.Meta(ge=1)] | None = None
    # The server dies (all connections dropped, port closed) after this long, or after
    # the engine has generated this many tokens, counted from when the faults were set.
    die_after_s: Seconds | None = None
    die_after_tokens: TokenCount | None = None
    # /health and every API endpoint answer 503 (the server never becomes ready).
    never_ready: bool = False
    # Responses claim to come from this model instead of the one requested.
    wrong_model: str | None = None


def merge_faults(current: Faults, changes: dict[str, object]) -> Faults:
    """`current` with `changes` applied, validated; raises msgspec.ValidationError."""
    return msgspec.convert({**msgspec.to_builtins(current), **changes}, Faults)


class FaultState:
    """Faults in force plus the counters they need (errors left, token baseline, arm time)."""

    def __init__(self, faults: Faults, now: float, tokens_total: int, seed: int) -> None:
        """Arm `faults` at time `now`, when the engine had generated `tokens_total` tokens."""
        self.faults = faults
        self.armed_at = now
        self._tokens_at_arm = tokens_total
        self._errors_left = faults.error_next
        self._rng = random.Random(seed)

    def take_error(self) -> int | None:
        """The status a new generation request must fail with, or None to serve it."""
        if self._errors_left > 0:
            self._errors_left -= 1
            return self.faults.error_status
        if self.faults.error_fraction and self._rng.random() < self.faults.error_fraction:
            return self.faults.error_status
        return None

    def die_at(self) -> float | None:
        """Monotonic time at which the server must die, if a timed death is set."""
        if self.faults.die_after_s is None:
            return None
        return self.armed_at + self.faults.die_after_s

    def tokens_kill(self, tokens_total: int) -> bool:
        """Whether the engine's token count has reached the die_after_tokens limit."""
        limit = self.faults.die_after_tokens
        return limit is not None and tokens_total - self._tokens_at_arm >= limit


class StreamFaults:
    """The faults one stream suffers, fixed from those in force when it started."""

    def __init__(self, faults: Faults) -> None:
        """Snapshot `faults` for one stream."""
        self._faults = faults
        self._events = 0
        self._stalled = False

    def malformed_line(self) -> bytes | None:
        """Called before each SSE event: a malformed event to send first, or None."""
        self._events += 1
        every = self._faults.malformed_every
        if every is not None and self._events % every == 0:
            return MALFORMED_EVENT
        return None

    def reset_due(self, tokens_sent: int) -> bool:
        """Whether the stream must be reset now that it has sent `tokens_sent` tokens."""
        limit = self._faults.reset_after_tokens
        return limit is not None and tokens_sent >= limit

    def stall_seconds(self, tokens_sent: int) -> float:
        """Seconds to go silent now (once per stream), else 0."""
        limit = self._faults.stall_after_tokens
        if self._stalled or limit is None or tokens_sent < limit:
            return 0.0
        self._stalled = True
        return self._faults.stall_s
