"""Markdown pages: order, slugs, titles, hostile markdown that must come out inert, and rebuilds that
render only the pages whose text changed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sitegen.build import build_site
from sitegen.content import markdown
from sitegen.content.markdown import load_pages
from sitegen.errors import InputError, InputErrors
from tests.builders import ROOT, same_as_fresh
from tests.sample_site import MIMO, built_sample


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def one_page(tmp_path: Path, text: str) -> str:
    """The html of a single page holding text under a title."""
    write(tmp_path, "page.md", "# Title\n\n" + text)
    (page,) = load_pages(tmp_path)
    return page.html


def test_order_slugs_and_skipped_files(tmp_path: Path) -> None:
    write(tmp_path, "20-methodology.md", "# Methodology\n")
    write(tmp_path, "10-about.md", "# About\n")
    write(tmp_path, "3-first.md", "# First\n")
    write(tmp_path, "faq.md", "# FAQ\n")
    write(tmp_path, "_draft.md", "no title, but skipped")
    write(tmp_path, "notes.txt", "not markdown")
    pages = load_pages(tmp_path)
    assert [p.slug for p in pages] == ["first", "about", "methodology", "faq"]
    assert pages[1].source == tmp_path / "10-about.md"


def test_title_is_first_h1_and_removed_from_html(tmp_path: Path) -> None:
    write(tmp_path, "about.md", "Intro line.\n\n# About *speed-matrix* `v1`\n\nBody.\n\n# Second h1\n")
    (page,) = load_pages(tmp_path)
    assert page.title == "About speed-matrix v1"
    assert page.html == '<p>Intro line.</p>\n<p>Body.</p>\n<h1 id="second-h1">Second h1</h1>\n'


def test_headings_get_unique_ids(tmp_path: Path) -> None:
    html = one_page(tmp_path, "## Imported *llm-inference-bench* results\n\n## Notes\n\n### Notes\n")
    assert '<h2 id="imported-llm-inference-bench-results">' in html
    assert '<h2 id="notes">' in html and '<h3 id="notes-2">' in html


def test_missing_title_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "10-about.md", "## Only a subheading\n")
    with pytest.raises(InputError) as caught:
        load_pages(tmp_path)
    assert caught.value.line().startswith(f"{path}:line 1: ")


def test_every_bad_file_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "10-about.md", "# About\n")
    write(tmp_path, "about.md", "# Again\n")
    write(tmp_path, "Bad Name.md", "# Bad\n")
    write(tmp_path, "runs.md", "# Runs\n")
    write(tmp_path, "30-untitled.md", "text\n")
    with pytest.raises(InputErrors) as caught:
        load_pages(tmp_path)
    lines = [e.line() for e in caught.value.errors]
    assert len(lines) == 4
    assert any("already used by" in line and "about.md" in line for line in lines)
    assert any("Bad Name.md" in line for line in lines)
    assert any("runs/ folder" in line for line in lines)
    assert any("30-untitled.md:line 1:" in line for line in lines)


def test_tables_render(tmp_path: Path) -> None:
    html = one_page(tmp_path, "| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert "<table>" in html and "<td>1</td>" in html


def test_each_table_scrolls_in_a_named_region_a_keyboard_reaches(tmp_path: Path) -> None:
    """A table wider than the page scrolls in a box of its own: focusable, and named by the heading above
    it (the page's title above the first), numbered where a heading has several, its name escaped."""
    table = "| a |\n|---|\n| 1 |\n\n"
    html = one_page(tmp_path, table + '## Tags <b> & "quotes"\n\n' + table + table)
    regions = re.findall(r'<div class="prose-table" role="region" tabindex="0" aria-label="([^"]*)">\n<table>', html)
    assert regions == ["Title", "Tags &lt;b&gt; &amp; &quot;quotes&quot;", "Tags &lt;b&gt; &amp; &quot;quotes&quot;, table 2"]
    assert html.count("</table>\n</div>") == 3 and "<b>" not in html


@pytest.mark.parametrize(
    "markdown, absent, present",
    [
        ("<script>alert(1)</script>\n", "<script", "&lt;script&gt;"),
        ("Inline <script>alert(1)</script> text.\n", "<script", "&lt;script&gt;"),
        ('<img src=x onerror="alert(1)">\n', "<img", "&lt;img src=x onerror="),
        ("[x](javascript:alert(1))\n", "href", "[x](javascript:alert(1))"),
        ("[x](JaVaScRiPt:alert(1))\n", "href", "[x]"),
        ("[x](vbscript:msgbox)\n", "href", "[x]"),
        ("![x](javascript:alert(1))\n", "<img", "![x]"),
        ("<javascript:alert(1)>\n", "href", "&lt;javascript:alert(1)&gt;"),
        ('[x](https://example.com "a\\" onmouseover=\\"alert(1)")\n', 'title="a" ', "&quot; onmouseover="),
        ("```html\n<iframe src=x></iframe>\n```\n", "<iframe", "&lt;iframe"),
    ],
)
def test_hostile_markdown_is_inert(tmp_path: Path, markdown: str, absent: str, present: str) -> None:
    html = one_page(tmp_path, markdown)
    assert absent not in html
    assert present in html
    assert not any(url.lower().startswith(("javascript:", "vbscript:")) for url in re.findall(r'(?:href|src)="([^"]*)"', html))


def test_ordinary_links_survive(tmp_path: Path) -> None:
    html = one_page(tmp_path, "[schema](../schema/bundle.schema.json) and [home](https://example.com/)\n")
    assert '<a href="../schema/bundle.schema.json">schema</a>' in html
    assert '<a href="https://example.com/">home</a>' in html


def test_committed_pages_load() -> None:
    pages = load_pages(ROOT / "content" / "pages")
    assert [(p.slug, p.title) for p in pages][:2] == [("about", "About speed-matrix"), ("methodology", "Methodology")]
    methodology = pages[1].html
    for status in ("Valid", "Over capacity", "Looped", "Requests queued", "Failed"):
        assert f"<strong>{status}</strong>" in methodology
    assert '<h2 id="imported-llm-inference-bench-results">Imported llm-inference-bench results</h2>' in methodology
    assert "<code>output_tps_per_user_p50</code>" in methodology


def test_a_rebuild_renders_only_the_pages_whose_text_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = built_sample(tmp_path)
    rendered: list[str] = []
    real = markdown.render_page
    monkeypatch.setattr(markdown, "render_page", lambda path, text, md: rendered.append(path.name) or real(path, text, md))
    run = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(run.read_text())
    bundle["decode"][0]["total_tok_s"] = 999.9
    run.write_text(json.dumps(bundle))
    build_site(content, out)
    assert rendered == []
    page = content / "pages" / "20-methodology.md"
    page.write_text(page.read_text().replace("\n\n", "\n\nA sentence added to the page.\n\n", 1))
    build_site(content, out)
    assert rendered == [page.name] and "A sentence added to the page." in (out / "methodology" / "index.html").read_text()
    assert same_as_fresh(content, out)
