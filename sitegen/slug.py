"""Slugs of model and GPU pages, one to each name, and of headings: built on the contract's slugs (runner/bundle/ids.py)."""

from __future__ import annotations

import functools
import hashlib
import re

from runner.bundle.ids import readable_slug, slug

PAGE_SLUG_MAX = 80
HASH_CHARS = 16  # of sha256: a second name with a given one's slug is out of reach
# A name its readable slug tells exactly, but for letter case and which separator joins its words.
_PLAIN = re.compile(r"[A-Za-z0-9]+(?:[ ._-][A-Za-z0-9]+)*")


@functools.lru_cache(maxsize=1 << 12)
def slugify(name: str) -> str:
    """The slug of a model's or GPU's page: one to each name, the same in every build whatever other runs exist.

    A plain name (ASCII letters and digits, words joined by single spaces, hyphens, dots or underscores)
    that fits keeps its readable slug ('Ling-3.0-flash' -> 'ling-3-0-flash'), so names that differ only
    in those ('H200 NVL', 'h200-nvl') share a page. Any other name (transliterated, look-alike letters,
    other punctuation, too long) gets its readable slug, cut to fit, then '--' and a hash of its exact
    text ('Модель Б' -> 'model-b--…'); as a readable slug never holds '--', the two kinds never meet.
    Remembered, as runs share their model and GPU names.
    """
    if len(name) <= PAGE_SLUG_MAX and _PLAIN.fullmatch(name):
        return readable_slug(name, PAGE_SLUG_MAX)
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    return f"{readable_slug(name, PAGE_SLUG_MAX - HASH_CHARS - 2) or 'x'}--{digest}"


def heading_slug(text: str) -> str:
    """The anchor of a heading ('Capacity at a target' -> 'capacity-at-a-target'): its readable slug, kept
    as it reads, as a page tells its headings apart itself."""
    return slug(text, PAGE_SLUG_MAX)
