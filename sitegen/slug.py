"""Slugs of model and GPU pages and of headings: the contract's slugs (runner/bundle/ids.py), kept shorter."""

from __future__ import annotations

import functools

from runner.bundle.ids import slug

PAGE_SLUG_MAX = 80


@functools.lru_cache(maxsize=1 << 12)
def slugify(text: str, max_length: int = PAGE_SLUG_MAX) -> str:
    """A page slug of text ('Ling-3.0 on H200' -> 'ling-3-0-on-h200'), at most `max_length` characters;
    remembered, as runs share their model and GPU names (four slugs a bundle read, 11 µs each to transliterate)."""
    return slug(text, max_length)
