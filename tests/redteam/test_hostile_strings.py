"""Hostile strings in every text field of a bundle: shown literally on every page, never run, never a formula."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.bundle.terminal_text import printable
from sitegen.build import build_site
from sitegen.pages.exports import FORMULA_STARTS
from sitegen.slug import slugify
from tests.builders import FIGURES, block_offsite, serve_folder
from tests.sample_site import MIMO, sample_document

# The first one leads every field of run A (a formula for the CSVs), the last leads run B (a URL scheme).
HOSTILE = [
    '=HYPERLINK("http://x")',
    "<script>window.__pwned=1</script>",
    "</script><script>window.__pwned=2</script>",
    '<img src=x onerror="window.__pwned=3">',
    '"><svg onload=window.__pwned=4>',
    "{{ 7*7 }}{% raw %}${7*7}",
    "line\u2028sep\u2029para",
    "\u202eevil\u202c \u200bzero\u200dwidth\ufeff \u05e9\u05dc\u05d5\u05dd",
    "ab" * 10_000,
    "javascript:window.__pwned=5",
]
FORWARD = " ".join(HOSTILE)
BACKWARD = " ".join(reversed(HOSTILE))
TEXT_FIELDS = {
    "hardware": ("type", "gpu", "os"),
    "engine": ("name", "version", "quantization", "backend", "repository", "build", "commit"),
    "run": ("served_model", "revision", "benchmark_tool", "decode_test", "prefill_mode"),
}
SCRIPT_JSON = re.compile(r'<script type="application/json"[^>]*>(.*?)</script>', re.S)
RENDERED = {"pages": 0}


def hostile_bundle(run_id: str, text: str) -> dict:
    """The base bundle with `text` in every string field and a Failed cell whose error is `text`; the model is shared."""
    data = sample_document(MIMO)
    data.update(id=run_id, model=FORWARD, submitter=text, origin=text, launch_command=text, notes=text)
    for section, keys in TEXT_FIELDS.items():
        data[section].update(dict.fromkeys(keys, text))
    first = data["decode"][0]
    data["decode"][0] = {"context_tokens": first["context_tokens"], "concurrency": first["concurrency"], "status": "Failed", "error": text}
    # The served facts and the readings of a cell, each of its text fields the text too.
    data["engine"]["speculative_method"] = text
    data["launch"] = dict.fromkeys(("ended", "log", "scheduler", "job_id", "node"), text)
    read = next(cell for cell in data["decode"] if cell["status"] == "Valid")
    read.update(speculative={"source": text, "acceptance_rate": 0.5}, energy={"source": text, "valid": False, "invalid_reason": text},
                server={"metrics": "vllm", "endpoints": [{"url": text, "scrapes": 2, "failed": 1}, {"url": "http://b/metrics", "scrapes": 2}]})
    return data


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site of two runs of the same (hostile) model, so a comparison page is built too."""
    content = tmp_path_factory.mktemp("hostile")
    (content / "runs").mkdir()
    for run_id, text in (("hostile-a", FORWARD), ("hostile-b", BACKWARD)):
        (content / "runs" / f"{run_id}.json").write_text(json.dumps(hostile_bundle(run_id, text)))
    out = content / "site"
    build_site(content, out)
    return out


@pytest.fixture(scope="module")
def hostile_server(hostile_site: Path) -> Iterator[str]:
    yield from serve_folder(hostile_site)


def _pages(site: Path) -> dict[str, str | None]:
    """Page path -> CSS selector of the element that must show the hostile text literally."""
    compares = sorted(p.stem for p in (site / "compare").glob("*-vs-*.html"))
    assert compares == ["hostile-a-vs-hostile-b"]
    return {
        "index.html": "#runs-table",
        "runs/hostile-a/index.html": "#matrix",
        "runs/hostile-b/index.html": "#matrix",
        f"compare/{compares[0]}.html": "main",
        "compare/index.html#runs=hostile-a,hostile-b": "#picker",
        f"models/{slugify(FORWARD)}/index.html": "main",
        f"gpus/{slugify(FORWARD)}/index.html": "main",
    }


def test_inlined_json_is_json_without_a_raw_angle_bracket(hostile_site: Path) -> None:
    blocks = [block for page in hostile_site.rglob("*.html") for block in SCRIPT_JSON.findall(page.read_text())]
    assert len(blocks) >= 3
    for block in blocks:
        json.loads(block)
        assert "<" not in block and "\u2028" not in block and "\u2029" not in block


def test_no_tag_from_the_input_reaches_the_html(hostile_site: Path) -> None:
    for page in hostile_site.rglob("*.html"):
        html = page.read_text()
        for tag in ("<script>window", "<img src=x", "<svg onload", 'href="javascript:'):
            assert tag not in html, (page, tag)


def test_downloads_defuse_formulas_and_parse(hostile_site: Path) -> None:
    tables = [hostile_site / "runs.csv", *hostile_site.glob("runs/*/measurements.csv")]
    texts = [cell for table in tables for row in csv.reader(table.open(newline="")) for cell in row]
    assert any(cell.startswith("'" + HOSTILE[0]) for cell in texts), "the hostile text is in the CSV, defused"
    assert [cell for cell in texts if cell.startswith(FORMULA_STARTS)] == []
    feed = ET.parse(hostile_site / "feed.xml").getroot()
    assert HOSTILE[1] in ET.tostring(feed, encoding="unicode", method="text")
    runs = json.loads((hostile_site / "runs.json").read_text())
    assert {run["model"] for run in runs} == {FORWARD}


def test_the_text_page_shows_the_served_facts_and_readings_with_their_controls_as_escapes(hostile_site: Path) -> None:
    text = (hostile_site / "runs" / "hostile-a" / "index.txt").read_text()
    for heading in ("How it was served", "Speculative decoding", "Energy", "Metrics endpoints that missed scrapes"):
        assert f"\n\n{heading}\n\n" in text
    assert f"Server log: {printable(FORWARD)}\n" in text and f"Invalid: {printable(FORWARD)}" in text
    assert "\u202e" not in text and "\u2028" not in text, "no control or reordering character reaches the file"


@pytest.mark.browser
def test_the_served_panels_show_hostile_text_literally(page, hostile_server: str) -> None:
    page.goto(hostile_server + "runs/hostile-a/index.html")
    for selector in ("section.served", "#speculative", "#energy", "section.endpoints"):
        shown = page.text_content(selector)
        assert [s[:40] for s in HOSTILE if s not in shown] == [], selector
    assert page.evaluate("typeof window.__pwned") == "undefined" and page.console_errors == []


@pytest.mark.browser
def test_hostile_text_is_shown_literally_and_never_runs(page, hostile_site: Path, hostile_server: str) -> None:
    outside = block_offsite(page, hostile_server)
    for path, selector in _pages(hostile_site).items():
        page.goto(hostile_server + path)
        if path.startswith("compare/index.html"):
            page.wait_for_selector("#picker table.matrix")
        shown = page.text_content(selector)
        missing = [s[:40] for s in HOSTILE if s not in shown]
        assert missing == [], (path, missing)
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        RENDERED["pages"] += 1
    assert outside == [] and page.console_errors == []
    FIGURES.append(f"hostile: {len(HOSTILE)} hostile strings x {RENDERED['pages']} pages rendered in chromium, shown literally, none ran")
