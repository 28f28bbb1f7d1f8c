"""The text a simulated request generates: seeded gibberish, then optionally a loop.

Random output never repeats exactly, so only the configured loop trips a loop
detector; the loop is `loop_text` tokenized once and cycled, so the streamed text
becomes an exact repetition of it.
"""

from __future__ import annotations

import random

from runner.simulator.tokenizer import MERGES, Tokenizer


class TextSource:
    """Output token ids of one request, produced on demand."""

    def __init__(
        self, palette: list[int], loop_tokens: list[int], loop_after: int | None, seed: int
    ) -> None:
        """Draw from `palette` with `seed`; after `loop_after` tokens cycle `loop_tokens`."""
        self._palette = palette
        self._loop = loop_tokens
        self._loop_after = loop_after
        self._rng = random.Random(seed)
        self._produced = 0

    def take(self, count: int) -> list[int]:
        """The next `count` token ids."""
        start = self._produced
        self._produced += count
        if self._loop_after is None or self._produced <= self._loop_after:
            return self._rng.choices(self._palette, k=count)
        free = max(0, self._loop_after - start)
        ids = self._rng.choices(self._palette, k=free)
        period = len(self._loop)
        first = start + free - self._loop_after
        ids.extend(self._loop[(first + i) % period] for i in range(count - free))
        return ids


def output_palette(tokenizer: Tokenizer) -> list[int]:
    """ASCII-only ids to draw output from: letters, spaces (weighted up) and merged pairs."""
    letters = [ord(c) for c in "abcdefghijklmnopqrstuvwxyz"]
    merged = [tokenizer.encode(m.decode())[0] for m in MERGES]
    return letters + merged + [ord(" ")] * 12
