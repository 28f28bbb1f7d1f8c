"""Run ids and slugs: lowercase ASCII letters, digits and single hyphens, made alike by runner and sitegen.

Names are transliterated (python-slugify with text-unidecode), so "通义千问" and "Модель Б"
get readable slugs of their own, and a run measured by the runner gets the id an import of
the same facts would give it.
"""

from __future__ import annotations

import hashlib
import re

from slugify import slugify

from runner.bundle.schema import RUN_ID_PATTERN

RUN_ID_MAX = 120
RUN_ID_RULE = f"lowercase ASCII letters, digits and inner hyphens, at most {RUN_ID_MAX} characters"


def readable_slug(text: str, max_length: int = RUN_ID_MAX) -> str:
    """Text transliterated, lowercased and cut ('Ling-3.0 on H200' -> 'ling-3-0-on-h200', '通义千问' ->
    'tong-yi-qian-wen'); empty when nothing in it transliterates ("🚀"). Never two hyphens in a row."""
    return slugify(text, max_length=max_length, word_boundary=False)


def slug(text: str, max_length: int = RUN_ID_MAX) -> str:
    """A stable slug of text: its readable slug.

    A name with nothing to transliterate ("🚀") gets a slug from its hash, so two such names stay apart.
    """
    found = readable_slug(text, max_length)
    if found:
        return found
    return "run" if not text.strip() else "x-" + hashlib.sha256(text.encode()).hexdigest()[:10]


def run_id(*parts: str | None) -> str:
    """A run id from its parts (model, GPU, engine, date…), the empty ones left out."""
    return slug("-".join(p for p in parts if p))


def is_run_id(text: str) -> bool:
    """True when `text` may name a run (and so a folder of the site)."""
    return re.match(RUN_ID_PATTERN, text) is not None


def not_a_run_id(text: str) -> str:
    """The one wording of a refused id, for `--id` of either command and a bundle's `id`."""
    return f"{text!r} is not a run id: {RUN_ID_RULE}"
