"""A deterministic byte-level tokenizer in which common letter pairs merge.

Ids 0-255 are single bytes, then one id per merged pair, then BOS. Text is
encoded greedily left to right, so tokens are neither characters nor bytes:
a client that assumes one token per character gets lengths wrong, as it would
on a real server. `decode(encode(s)) == s` for every string; the converse holds
only for ids the encoder would produce (as with real BPE tokenizers).
"""

from __future__ import annotations

import re

MERGES: tuple[bytes, ...] = tuple(
    p.encode()
    for p in (
        "th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng "
        "se ha as ou io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si"
    ).split()
) + (b" t", b" a", b" s", b" o", b" i", b" w", b"e ", b"s ", b"d ", b"t ", b", ", b". ")


class Tokenizer:
    """Encodes text to ids and back; the vocabulary is bytes + MERGES + BOS."""

    def __init__(self) -> None:
        """Build the id tables and the greedy matcher."""
        self._pieces: list[bytes] = [bytes([b]) for b in range(256)] + list(MERGES)
        self._ids: dict[bytes, int] = {piece: i for i, piece in enumerate(self._pieces)}
        self.bos_id = len(self._pieces)
        self.vocab_size = self.bos_id + 1
        alternatives = b"|".join(re.escape(m) for m in MERGES)
        self._matcher = re.compile(alternatives + b"|.", re.DOTALL)
        self._texts = [piece.decode("utf-8", "replace") for piece in self._pieces]

    def encode(self, text: str, add_bos: bool = False) -> list[int]:
        """Token ids of `text`, optionally led by BOS."""
        ids = [self._ids[m] for m in self._matcher.findall(text.encode("utf-8"))]
        return [self.bos_id, *ids] if add_bos else ids

    def decode(self, ids: list[int]) -> str:
        """Text of `ids`; BOS is skipped, invalid UTF-8 becomes U+FFFD. Raises on unknown ids."""
        self.check(ids)
        data = b"".join(self._pieces[i] for i in ids if i != self.bos_id)
        return data.decode("utf-8", "replace")

    def piece_text(self, token_id: int) -> str:
        """Text of one ASCII token, for streaming output cheaply."""
        return self._texts[token_id]

    def check(self, ids: list[int]) -> None:
        """Raise ValueError naming the first id outside the vocabulary."""
        for i in ids:
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"Token id {i} is out of vocabulary (size {self.vocab_size})")
