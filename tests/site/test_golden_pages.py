"""Golden pages: the site built from the seeds must equal the reviewed copies in tests/golden/ (a page of each
kind, and the runs.json, runs.csv and feed.xml downloads), and so must the pages of a run with every fact a
served deployment records (tests/golden/served/: its bundle, made by tests.builders.make_served_bundle, and
its pages).

Any change to a template, a formatter or the view shows up here as a diff to review. After an
intended change, write the new copies and review them with git diff:

    UPDATE_GOLDEN=1 python3 -m pytest tests/site/test_golden_pages.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.bundle.schema import encode_bundle
from sitegen.build import build_site
from tests.builders import ROOT, make_served_bundle
from tests.page_text import GOLDEN, matches_golden

COMPARE = "compare/mimo-v2-6-flash-rl-h200-nvl-x2-vs-ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03.html"
PAGES = [
    "index.html",
    "runs/ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03/index.html",
    "runs/ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03/index.txt",
    "runs/ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03/measurements.csv",
    "runs/mimo-v2-6-flash-rl-h200-nvl-x2/index.html",
    COMPARE,
    "compare/index.html",
    "capacity/index.html",
    "models/ling-3-0-flash-fp4/index.html",
    "gpus/h200-nvl/index.html",
    "methodology/index.html",
    "runs.csv",
    "runs.json",
    "feed.xml",
]
SERVED = GOLDEN / "served"
SERVED_RUN = make_served_bundle()
SERVED_PAGES = [f"runs/{SERVED_RUN.id}/{name}" for name in ("index.html", "index.txt", "measurements.csv")]


@pytest.mark.parametrize("page", PAGES)
def test_page_matches_its_golden_copy(built_site: Path, page: str) -> None:
    matches_golden((built_site / page).read_text(encoding="utf-8"), GOLDEN / page)


@pytest.fixture(scope="module")
def served_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of the golden served bundle alone (with the content pages, which the page links to)."""
    content = tmp_path_factory.mktemp("served")
    shutil.copytree(ROOT / "content" / "pages", content / "pages")
    (content / "runs").mkdir()
    shutil.copy(SERVED / f"{SERVED_RUN.id}.json", content / "runs")
    build_site(content, content / "site")
    return content / "site"


def test_the_served_bundle_is_the_builders() -> None:
    matches_golden(encode_bundle(SERVED_RUN), SERVED / f"{SERVED_RUN.id}.json")


@pytest.mark.parametrize("page", SERVED_PAGES)
def test_served_page_matches_its_golden_copy(served_site: Path, page: str) -> None:
    matches_golden((served_site / page).read_text(encoding="utf-8"), SERVED / page)
