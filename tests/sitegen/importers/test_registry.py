"""The importer registry: each real file is read by its own format, and every import is scrubbed and checked once."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from runner.bundle.display import COLD_TTFT_NOTE, LEGEND, PAGE_TEXT, TTFT_NOTE
from sitegen.content import loader
from sitegen.errors import InputError
from sitegen.importers import importer as importer_module
from sitegen.importers import registry
from sitegen.importers.importer import Source
from sitegen.importers.options import ImportOptions
from sitegen.importers.sweep import SweepFile, sweep_bundle
from tests.builders import FIXTURES, ROOT
from tests.sample_site import sample_file

PEERS = FIXTURES / "peers"
# One real file of each format, and the importer that must read it (None: a sample run's bundle, written for the test).
FILES = [
    (FIXTURES / "seeds" / "000_0a674d15c5caef78.txt", "a captured speed test matrix page"),
    (None, "speed-matrix"),
    (FIXTURES / "llm-inference-bench-0.4.18.json", "llm-inference-bench"),
    (min((PEERS / "vllm" / "sweep").rglob("run=*.json")), "vllm bench serve"),
    (PEERS / "guidellm" / "sweep" / "in256.json", "GuideLLM"),
    (PEERS / "aiperf" / "sweep" / "in256-c4" / "profile_export_aiperf.json", "AIPerf"),
]


@pytest.fixture(params=FILES, ids=[name for _, name in FILES])
def real_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A real file of one format, and the importer that must read it."""
    path, name = request.param
    return path or sample_file(tmp_path), name


def test_each_file_is_recognised_by_its_own_format_only(real_file: tuple[Path, str]) -> None:
    path, name = real_file
    source = registry._source(path)
    claimed = [importer.name for importer in registry.IMPORTERS if importer.recognises(source)]
    assert claimed[0] == name
    # Only the captured page may also say yes, and only to text that is not JSON.
    assert all(other == name for other in claimed) or not source.is_json


def test_every_import_is_scrubbed_once_and_checked_once(real_file: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    path, name = real_file
    calls: Counter[str] = Counter()
    scrub, check = loader.scrub, loader.check_bundle

    def counted_scrub(bundle):
        calls["scrub"] += 1
        return scrub(bundle)

    def counted_check(bundle, where):
        calls["check"] += 1
        return check(bundle, where)

    for module in (loader, importer_module):  # importer.py holds its own name for loader.scrub
        monkeypatch.setattr(module, "scrub", counted_scrub)
    monkeypatch.setattr(loader, "check_bundle", counted_check)
    source = registry.read_source(path, ImportOptions(model="given on the command line"))
    bundle = sweep_bundle([source], ImportOptions(model="given on the command line")) if isinstance(source, SweepFile) else source
    assert bundle.model == "given on the command line"
    assert calls == {"scrub": 1, "check": 1}


def test_an_unknown_json_names_every_format_it_is_not(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"hello": "world"}')
    with pytest.raises(InputError) as caught:
        registry.import_file(path, ImportOptions())
    for importer in registry.IMPORTERS[:-1]:
        assert importer.name in caught.value.message


def test_text_that_is_not_json_goes_to_the_page_importer_alone() -> None:
    source = Source(Path("notes.txt"), "just some notes")
    assert [i.name for i in registry.IMPORTERS if i.recognises(source)] == ["a captured speed test matrix page"]


def test_run_page_templates_print_the_fixed_words_from_page_text_not_as_copies() -> None:
    """A sentence the importer looks for, written into a template, would drift from the one it looks for."""
    sentences = [PAGE_TEXT.kicker, PAGE_TEXT.prefill_caption, PAGE_TEXT.decode_caption, PAGE_TEXT.table_caption,
                 TTFT_NOTE, COLD_TTFT_NOTE, *LEGEND.values()]
    for template in (ROOT / "templates").glob("*.html"):
        text = template.read_text()
        found = [s for s in sentences if s in text]
        assert found == [], f"{template.name} writes out {found}: print them from page_text"
        assert not re.search(r"<h2>(Prefill|Sustained decode|All measurements|Launch command)</h2>", text), template.name
