"""Every seed page round-trips: import -> build -> the page's #matrix text equals the seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.bundle.schema import decode_bundle, encode_bundle_compact
from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from sitegen.importers.registry import import_file
from tests.builders import ROOT, SEEDS
from tests.page_text import MatrixText, normalize_page_text


def _run_page(built_site: Path, seed: Path) -> Path:
    bundle = import_file(seed, ImportOptions())
    return built_site / "runs" / bundle.id / "index.html"


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_matrix_text_matches_seed_without_a_browser(built_site: Path, seed: Path) -> None:
    parser = MatrixText()
    parser.feed(_run_page(built_site, seed).read_text())
    assert normalize_page_text(" ".join(parser.parts)) == normalize_page_text(seed.read_text())


@pytest.mark.browser
@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_matrix_inner_text_matches_seed_in_chromium(built_site: Path, page, seed: Path) -> None:
    page.goto(_run_page(built_site, seed).as_uri())
    shown = page.inner_text("#matrix")
    assert normalize_page_text(shown) == normalize_page_text(seed.read_text())
    assert page.console_errors == []


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_committed_bundle_is_the_seed_imported(seed: Path) -> None:
    bundle = import_file(seed, ImportOptions())
    committed = ROOT / "content" / "runs" / f"{bundle.id}.json"
    from runner.bundle.schema import encode_bundle

    assert committed.read_bytes() == encode_bundle(bundle)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_seed_without_blank_lines_imports_the_same(tmp_path: Path, seed: Path) -> None:
    squeezed = tmp_path / seed.name
    squeezed.write_text("\n".join(line for line in seed.read_text().splitlines() if line.strip()))
    assert import_file(squeezed, ImportOptions()) == import_file(seed, ImportOptions())


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_text_rendition_imports_back_to_the_same_bundle(built_site: Path, tmp_path: Path, seed: Path) -> None:
    text_page = _run_page(built_site, seed).with_suffix(".txt")
    written, errors = import_files([text_page], tmp_path, ImportOptions())
    assert errors == []
    published = built_site / "runs" / written[0].stem / "bundle.json"
    assert published.read_bytes() == encode_bundle_compact(decode_bundle(written[0].read_bytes()))
