"""An imported llm-inference-bench file publishes: its run page shows each status where the file says."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from runner.bundle import formats as f
from sitegen.build import build_site
from sitegen.cli import main
from tests.builders import FIXTURES

SOURCE_PATH = FIXTURES / "llm-inference-bench-0.4.18.json"


class _Cells(HTMLParser):
    """Text of each decode matrix cell, keyed by (row label, column header)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_matrix = False
        self.header: list[str] = []
        self.row: list[str] = []
        self.cells: dict[tuple[str, str], str] = {}
        self.text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("class", "matrix") in attrs:
            self.in_matrix = True
        elif self.in_matrix and tag in ("td", "th"):
            self.text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.in_matrix = False
        elif self.in_matrix and tag in ("td", "th") and self.text is not None:
            self.row.append("".join(self.text).strip())
            self.text = None
        elif self.in_matrix and tag == "tr":
            if not self.header:
                self.header = self.row
            else:
                self.cells.update({(self.row[0], h): c for h, c in zip(self.header[1:], self.row[1:])})
            self.row = []

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)


def test_imported_results_build_into_a_page_with_the_right_statuses(tmp_path: Path) -> None:
    source = json.loads(SOURCE_PATH.read_text())
    result = CliRunner().invoke(main, ["import", str(SOURCE_PATH), "--out", str(tmp_path / "content" / "runs"), "--gpu", "RTX 4090", "--gpu-count", "1", "--id", "lib-run"])
    assert result.exit_code == 0, result.output
    build_site(tmp_path / "content", tmp_path / "site")
    parser = _Cells()
    parser.feed((tmp_path / "site" / "runs" / "lib-run" / "index.html").read_text())
    measured = {(r["context_tokens"], r["concurrency"]): r for r in source["results"]}
    planned = [(c, n) for c in source["metadata"]["context_lengths"] for n in source["metadata"]["concurrency_levels"]]
    for context, n in planned:
        shown = parser.cells[(f.context_label(context), str(n))]
        cell = measured.get((context, n))
        if cell is None:
            assert shown == "Over capacity"
            continue
        expected = f.tok_s(cell["aggregate_tps"]) + ("Requests queued" if cell["capacity_limited"] else "") + f"{f.ms_whole(cell['ttft_p50'] * 1000)} TTFT"
        assert shown == expected
    statuses = [parser.cells[k] for k in parser.cells]
    assert sum("Requests queued" in s for s in statuses) == sum(r["capacity_limited"] for r in source["results"]) == 1
    assert sum(s == "Over capacity" for s in statuses) == len(planned) - len(measured) == 1
