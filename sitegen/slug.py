"""Slugs for run ids: lowercase ASCII letters, digits and single hyphens."""

from __future__ import annotations

import re
import unicodedata


def slugify(text: str, max_length: int = 80) -> str:
    """A stable slug of text ('Ling-3.0 on H200' -> 'ling-3-0-on-h200'); 'run' when empty."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:max_length].strip("-") or "run"
