"""The KV cache: block accounting for admission, and the prefix cache.

Blocks are reserved whole at admission (prompt + max_tokens) and freed when the
request ends. The prefix cache remembers chained hashes of full prompt blocks in
LRU order, up to the cache's size in blocks, like vLLM's automatic prefix caching.
"""

from __future__ import annotations

from collections import OrderedDict


def blocks_for(tokens: int, block_size: int) -> int:
    """Blocks needed to hold `tokens` tokens."""
    return -(-tokens // block_size)


class BlockPool:
    """Counts free and used KV blocks."""

    def __init__(self, num_blocks: int) -> None:
        """A pool of `num_blocks` free blocks."""
        self.num_blocks = num_blocks
        self.used = 0

    def try_take(self, blocks: int) -> bool:
        """Reserve `blocks` if they are free; True when reserved."""
        if self.used + blocks > self.num_blocks:
            return False
        self.used += blocks
        return True

    def give_back(self, blocks: int) -> None:
        """Release `blocks` reserved earlier."""
        self.used -= blocks

    @property
    def usage(self) -> float:
        """Fraction of blocks in use, 0 to 1."""
        return self.used / self.num_blocks


class PrefixCache:
    """Which full prompt blocks were prefilled before (LRU, bounded)."""

    def __init__(self, block_size: int, capacity_blocks: int, enabled: bool) -> None:
        """A cache of up to `capacity_blocks` blocks; a disabled cache never hits."""
        self._block_size = block_size
        self._capacity = capacity_blocks
        self._enabled = enabled
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def _hashes(self, prompt: list[int]) -> list[int]:
        """Chained hashes of the full blocks of `prompt`."""
        size = self._block_size
        hashes: list[int] = []
        h = 0
        for start in range(0, len(prompt) - size + 1, size):
            h = hash((h, tuple(prompt[start : start + size])))
            hashes.append(h)
        return hashes

    def cached_tokens(self, prompt: list[int]) -> int:
        """Leading tokens of `prompt` already cached; the last token is always recomputed."""
        if not self._enabled:
            return 0
        hits = 0
        for h in self._hashes(prompt):
            if h not in self._blocks:
                break
            self._blocks.move_to_end(h)
            hits += 1
        return min(hits * self._block_size, len(prompt) - 1)

    def insert(self, prompt: list[int]) -> None:
        """Remember the full blocks of a prefilled `prompt`, evicting the least recent."""
        if not self._enabled:
            return
        for h in self._hashes(prompt):
            self._blocks[h] = None
            self._blocks.move_to_end(h)
        while len(self._blocks) > self._capacity:
            self._blocks.popitem(last=False)
