"""A built page's text as its reader gets it: what the element with id="matrix" holds, and text made
comparable with a seed page whatever its whitespace, list or table punctuation; and a built page held
to its reviewed golden copy."""

from __future__ import annotations

import difflib
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.builders import ROOT


def normalize_page_text(text: str) -> str:
    """Page text for comparison: no whitespace, no markdown list or table punctuation, no label colons."""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"^\|?\s*:?-{3,}", stripped):
            continue
        kept.append(re.sub(r"^[-*]\s+", "", stripped))
    return re.sub(r"[\s|:]+", "", "".join(kept))


class MatrixText(HTMLParser):
    """Collects the text inside the element with id="matrix"."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth or ("id", "matrix") in attrs:
            self.depth += tag not in ("br", "img", "input", "meta", "link")

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


GOLDEN = ROOT / "tests" / "golden"


def matches_golden(built: bytes | str, golden: Path) -> None:
    """Fail with the diff unless `built` is the golden copy (UPDATE_GOLDEN=1 writes it first)."""
    text = built.decode() if isinstance(built, bytes) else built
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden copy of {golden.relative_to(GOLDEN)}: run UPDATE_GOLDEN=1 python3 -m pytest with the test that builds it"
    expected = golden.read_text(encoding="utf-8")
    if text != expected:
        diff = difflib.unified_diff(expected.splitlines(), text.splitlines(), f"golden/{golden.relative_to(GOLDEN)}", "built",
                                    lineterm="", n=1)
        pytest.fail("page differs from its golden copy (UPDATE_GOLDEN=1 rewrites it after an intended change):\n"
                    + "\n".join(list(diff)[:60]))
