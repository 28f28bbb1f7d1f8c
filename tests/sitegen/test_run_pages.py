"""Planning run folders and comparisons: a rebuild renders what its inputs changed, and a steady
run's pages keep their keys only while nothing they show changed."""

from __future__ import annotations

import json
from pathlib import Path

from sitegen.build import build_site
from tests.builders import built_copy, same_as_fresh

BASELINE = "mimo-v2-6-flash-rl-h200-nvl-x2"
PARTNER = "ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03"  # its one comparison partner


def test_a_partners_new_title_reaches_the_run_page_that_lists_it(tmp_path: Path) -> None:
    """The VRAM is in a run's title but not in what pairs runs: the pairs stay, the partner's page changes."""
    content, out = built_copy(tmp_path)
    path = content / "runs" / f"{PARTNER}.json"
    bundle = json.loads(path.read_text())
    bundle["hardware"]["vram_per_gpu_gb"] = 777
    path.write_text(json.dumps(bundle))
    build_site(content, out)
    assert "777GB" in (out / "runs" / BASELINE / "index.html").read_text()
    assert same_as_fresh(content, out)


def test_a_new_content_page_reaches_every_run_page(tmp_path: Path) -> None:
    content, out = built_copy(tmp_path)
    (content / "pages" / "30-faq.md").write_text("# FAQ\n\nQuestions people ask.\n")
    build_site(content, out)
    for page in (out / "runs").glob("*/index.html"):
        assert "FAQ" in page.read_text()
    assert same_as_fresh(content, out)
