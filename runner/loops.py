"""Loop detection: has a stream's text become an exact repetition?

A stream loops when its last max(4·p, MIN_SPAN) characters repeat with a period p of at
most MAX_PERIOD characters. Checked after every chunk in time independent of the text's
length: the last PROBE characters must recur exactly p characters earlier, so candidate
periods come from `str.rfind` over a bounded tail (C speed) and each candidate is
verified with one slice comparison.
"""

from __future__ import annotations

MAX_PERIOD = 2048
MIN_REPEATS = 4
MIN_SPAN = 4096
PROBE = 32
_TAIL = max(MIN_REPEATS * MAX_PERIOD, MIN_SPAN)


class LoopDetector:
    """Incremental detector for one stream; feed it text as it arrives."""

    __slots__ = ("_tail", "looped")

    def __init__(self) -> None:
        """Start with an empty text."""
        self._tail = ""
        self.looped = False

    def feed(self, text: str) -> bool:
        """Append `text`; return True once the stream has looped (and ever after)."""
        if self.looped or not text:
            return self.looped
        tail = self._tail + text
        if len(tail) > 2 * _TAIL:
            tail = tail[-_TAIL:]
        self._tail = tail
        self.looped = len(tail) >= MIN_SPAN and self._has_period(tail)
        return self.looped

    @staticmethod
    def _has_period(tail: str) -> bool:
        """True if a suffix of `tail` is a repetition long enough to count as a loop."""
        n = len(tail)
        probe_at = n - PROBE
        probe = tail[probe_at:]
        lowest = max(0, probe_at - MAX_PERIOD)
        end = n - 1
        while True:
            j = tail.rfind(probe, lowest, end)
            if j < 0:
                return False
            period = probe_at - j
            span = max(MIN_REPEATS * period, MIN_SPAN)
            if span <= n and tail[n - span + period :] == tail[n - span : n - period]:
                return True
            end = j + PROBE - 1
