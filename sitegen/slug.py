"""Slugs of model and GPU pages and of headings: the contract's slugs (runner/bundle/ids.py), kept shorter."""

from __future__ import annotations

from runner.bundle.ids import slug

PAGE_SLUG_MAX = 80


def slugify(text: str, max_length: int = PAGE_SLUG_MAX) -> str:
    """A page slug of text ('Ling-3.0 on H200' -> 'ling-3-0-on-h200'), at most `max_length` characters."""
    return slug(text, max_length)
