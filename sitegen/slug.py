"""Slugs for run ids and model and GPU pages: lowercase ASCII letters, digits and single hyphens.

Names are transliterated (python-slugify with text-unidecode), so "通义千问" and "Модель Б"
get readable slugs of their own instead of all becoming one empty slug.
"""

from __future__ import annotations

import hashlib

from slugify import slugify as _transliterated


def slugify(text: str, max_length: int = 80) -> str:
    """A stable slug of text ('Ling-3.0 on H200' -> 'ling-3-0-on-h200', '通义千问' -> 'tong-yi-qian-wen').

    A name with nothing to transliterate ("🚀") gets a slug from its hash, so two such names stay apart.
    """
    slug = _transliterated(text, max_length=max_length)
    if slug:
        return slug
    return "run" if not text.strip() else "x-" + hashlib.sha256(text.encode()).hexdigest()[:10]
