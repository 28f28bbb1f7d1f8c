"""Golden pages: the site built from the seeds must equal the reviewed copies in tests/golden/.

Any change to a template, a formatter or the view shows up here as a diff to review. After an
intended change, write the new copies and review them with git diff:

    UPDATE_GOLDEN=1 python3 -m pytest tests/site/test_golden_pages.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from tests.builders import ROOT

GOLDEN = ROOT / "tests" / "golden"
COMPARE = "compare/mimo-v2-6-flash-rl-h200-nvl-x2-vs-ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03.html"
PAGES = [
    "index.html",
    "runs/ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03/index.html",
    "runs/ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03/index.txt",
    "runs/ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03/measurements.csv",
    "runs/mimo-v2-6-flash-rl-h200-nvl-x2/index.html",
    COMPARE,
    "compare/index.html",
    "methodology/index.html",
    "runs.csv",
]


@pytest.mark.parametrize("page", PAGES)
def test_page_matches_its_golden_copy(built_site: Path, page: str) -> None:
    built = (built_site / page).read_text(encoding="utf-8")
    golden = GOLDEN / page
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(built, encoding="utf-8")
    assert golden.exists(), f"no golden copy of {page}: run UPDATE_GOLDEN=1 python3 -m pytest {__file__}"
    expected = golden.read_text(encoding="utf-8")
    if built != expected:
        diff = difflib.unified_diff(expected.splitlines(), built.splitlines(), f"golden/{page}", f"built/{page}", lineterm="", n=1)
        pytest.fail("page differs from its golden copy (UPDATE_GOLDEN=1 rewrites it after an intended change):\n"
                    + "\n".join(list(diff)[:60]))
