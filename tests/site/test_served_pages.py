"""A site with runs that record how they were served (API, topology, launch), speculative decoding and energy:
the run page's panels outside #matrix, index.txt, the downloads, the listings' acceptance column, the
comparison and the capacity ranking by energy, in the built files and in chromium."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from runner.bundle.schema import Bundle, encode_bundle
from sitegen.build import build_site
from sitegen.content.loader import load_bundle
from sitegen.figures.capacity import CHAT, JOULES_PER_OUTPUT_TOKEN, TOK_S_PER_KW, ranked_run
from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from sitegen.views.capacity_view import ranking
from tests.builders import INVALID_ENERGY_CELL, block_offsite, make_served_bundle, serve_folder
from tests.page_text import MatrixText
from tests.sample_site import write_content

SERVED = "qwen3-32b-disaggregated"
AGAIN = "qwen3-32b-disaggregated-again"
PLAIN = "qwen3-32b-plain"  # SERVED without any of the new facts
# Each served run's acceptance lengths scaled, so that the index column has an order to show.
ACCEPTANCE = {SERVED: 1.0, AGAIN: 1.2, "qwen3-32b-ngram": 0.7}


def plain_copy(bundle: Bundle, run_id: str) -> Bundle:
    """The bundle without the API, topology, launch, speculative decoding, energy and endpoints."""
    plain = msgspec.structs.replace(bundle, id=run_id, topology=msgspec.UNSET, launch=msgspec.UNSET)
    plain.run = msgspec.structs.replace(bundle.run, api=msgspec.UNSET)
    plain.engine = msgspec.structs.replace(bundle.engine, speculative_method=msgspec.UNSET, speculative_tokens=msgspec.UNSET)
    plain.decode = [msgspec.structs.replace(c, speculative=msgspec.UNSET, energy=msgspec.UNSET, server=msgspec.UNSET) for c in bundle.decode]
    return plain


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample runs, three served runs (a rerun of the first and one with fewer tokens accepted) and the
    first without its new facts."""
    content = write_content(tmp_path_factory.mktemp("served"))
    for day, (run_id, factor) in enumerate(ACCEPTANCE.items()):
        bundle = make_served_bundle(run_id, scale=factor, measured_at=dt.datetime(2026, 9, 3 + day, 9, 0, tzinfo=dt.timezone.utc))
        for cell in bundle.decode:
            if cell.speculative:
                cell.speculative.mean_acceptance_length *= factor
        (content / "runs" / f"{run_id}.json").write_bytes(encode_bundle(bundle))
        if run_id == SERVED:
            (content / "runs" / f"{PLAIN}.json").write_bytes(encode_bundle(plain_copy(bundle, PLAIN)))
    build_site(content, content.parent / "site")
    return content.parent / "site"


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    yield from serve_folder(site)


def _page(site: Path, run_id: str) -> tuple[str, str]:
    """A run page's #matrix element and what follows it."""
    html = (site / "runs" / run_id / "index.html").read_text()
    matrix, after = html.split('<article id="matrix"', 1)[1].split("</article>", 1)
    return matrix, after


def _matrix_text(site: Path, run_id: str) -> str:
    parser = MatrixText()
    parser.feed((site / "runs" / run_id / "index.html").read_text())
    return " ".join(parser.parts)


def test_the_panels_sit_outside_the_matrix_which_reads_as_without_them(site: Path) -> None:
    matrix, after = _page(site, SERVED)
    assert _matrix_text(site, SERVED) == _matrix_text(site, PLAIN)
    for words in ("How it was served", "Speculative decoding", "Energy", "Metrics endpoints", "eagle3, 3 draft tokens", "slurm job 4242", "nvml"):
        assert words not in matrix and words in after, words
    assert "<dt>Decode GPUs</dt><dd>8 (tok/s per GPU is per decode GPU)</dd>" in after
    assert '<td colspan="5" class="invalid">Invalid: a gap of 4.2 s in the power samples</td>' in after
    assert "<li>http://10.0.0.3:8000/metrics: 3 of 40 scrapes failed, slowest 2,012 ms</li>" in after
    for table in ("Speculative decoding", "Energy"):  # named apart from their sections, which the headings name
        assert f'<div class="table-scroll" role="region" tabindex="0" aria-label="{table} by cell">' in after
    _, plain_after = _page(site, PLAIN)
    assert not any(words in plain_after for words in ("How it was served", 'id="speculative"', 'id="energy"', "Metrics endpoints"))


def test_the_text_page_carries_the_same_facts_and_imports_back(site: Path, tmp_path: Path) -> None:
    text = (site / "runs" / SERVED / "index.txt").read_text()
    assert "\n\nHow it was served\n\nAPI: Chat completions" in text and "Batch job: slurm job 4242 on gpu-07\n" in text
    assert "\n8K\t1\t69.7 %\t3.09\t85.6 · 69.6 · 53.8\t900\n" in text
    assert f"\n32K\t{INVALID_ENERGY_CELL[1]}\tInvalid: a gap of 4.2 s in the power samples\n" in text
    assert text.endswith("8K × 16\nhttp://10.0.0.2:8000/metrics: 40 scrapes, slowest 38 ms\n"
                         "http://10.0.0.3:8000/metrics: 3 of 40 scrapes failed, slowest 2,012 ms\n"
                         "\nVerification\n\nImported: from another tool (dev).\n"), "the panels, then the run's verification"
    written, errors = import_files([site / "runs" / SERVED / "index.txt"], tmp_path, ImportOptions())
    assert errors == []
    imported, built = load_bundle(written[0]), load_bundle(site / "runs" / SERVED / "bundle.json")
    assert [(c.context_tokens, c.concurrency, c.status, c.total_tok_s) for c in imported.decode] == [
        (c.context_tokens, c.concurrency, c.status, round(c.total_tok_s, 1) if c.total_tok_s else None) for c in built.decode]


def test_the_downloads_carry_the_readings_and_how_each_run_was_served(site: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((site / "runs" / SERVED / "measurements.csv").read_text())))
    invalid = next(r for r in rows if (int(r["context_tokens"]), int(r["concurrency"])) == INVALID_ENERGY_CELL)
    assert (invalid["energy_valid"], invalid["joules_per_output_token"], invalid["acceptance_rate"] != "") == ("false", "", True)
    runs = {r["id"]: r for r in json.loads((site / "runs.json").read_text())}
    assert (runs[SERVED]["api"], runs[SERVED]["decode_gpus"], runs[SERVED]["prefill_gpus"], runs[SERVED]["speculative_tokens"]) == ("chat", 8, 4, 3)
    assert runs[SERVED]["peak_tok_s_per_gpu"] == runs[SERVED]["peak_tok_s"] / 8
    assert runs[PLAIN]["mean_acceptance_length"] is None and runs[PLAIN]["peak_tok_s_per_gpu"] == runs[PLAIN]["peak_tok_s"] / 12
    table = {r["id"]: r for r in csv.DictReader(io.StringIO((site / "runs.csv").read_text()))}
    assert float(table[AGAIN]["mean_acceptance_length"]) == runs[AGAIN]["mean_acceptance_length"]
    assert float(table[SERVED]["best_joules_per_output_token"]) == runs[SERVED]["best_joules_per_output_token"]


def test_the_acceptance_column_shows_in_listings_that_hold_a_run_with_it(site: Path) -> None:
    header = '<th scope="col" data-key="acceptance" data-kind="number"'
    assert header in (site / "index.html").read_text()
    assert header in (site / "gpus" / "h200-sxm" / "index.html").read_text()
    assert header not in (site / "gpus" / "h200-nvl" / "index.html").read_text(), "none of its runs has the figure"
    assert (site / "data" / "sort-acceptance-descending.js").is_file()


def test_the_comparison_sets_both_runs_readings_side_by_side(site: Path) -> None:
    (page,) = [p for p in (site / "compare").glob(f"{SERVED}-vs-*.html") if AGAIN in p.name]
    html = page.read_text()
    section = html.split('aria-labelledby="serving-heading"', 1)[1].split("</section>", 1)[0]
    assert '<th scope="colgroup" colspan="4">' in section and section.count("<th scope=\"col\">J per output token</th>") == 2
    assert "<td>Invalid</td><td>Invalid</td>" in section


def test_the_ranking_page_offers_to_rank_by_energy(site: Path) -> None:
    html = (site / "capacity" / "index.html").read_text()
    assert 'data-energy' in html and '<option value="joules_per_output_token">fewest J per output token</option>' in html
    assert '<th scope="col">J per output token</th><th scope="col">tok/s per kW</th>' in html


def _column(page, index: int) -> list[str]:
    page.wait_for_selector("#runs-table:not([aria-busy=true])", state="attached")
    return page.eval_on_selector_all("#runs-table tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value'))")


@pytest.mark.browser
def test_the_acceptance_column_sorts_runs_without_it_last(page, site: Path, server: str) -> None:
    outside = block_offsite(page, server)
    page.goto(server + "index.html")
    index = 1 + page.eval_on_selector_all("#runs-table thead th[data-key]", "ths => ths.map(th => th.dataset.key)").index("acceptance")
    lengths = {r["id"]: r["mean_acceptance_length"] for r in json.loads((site / "runs.json").read_text())}
    valued = sorted(v for v in lengths.values() if v is not None)
    page.click("#runs-table thead th[data-key=acceptance] button")
    shown = _column(page, index)
    assert [float(v) for v in shown[:3]] == valued[::-1] and shown[3:] == [""] * (len(lengths) - 3), "biggest first, runs without it last"
    assert page.get_attribute("#runs-table thead th[data-key=acceptance]", "aria-sort") == "descending"
    page.click("#runs-table thead th[data-key=acceptance] button")
    shown = _column(page, index)
    assert [float(v) for v in shown[:3]] == valued and shown[3:] == [""] * (len(lengths) - 3)
    texts = page.eval_on_selector_all("#runs-table tbody tr", f"rows => rows.map(r => r.cells[{index}].textContent)")
    assert texts[-1] == "—" and texts[0] == f"{valued[0]:.2f}"
    assert outside == [] and page.console_errors == []


@pytest.mark.browser
@pytest.mark.parametrize("by", [JOULES_PER_OUTPUT_TOKEN, TOK_S_PER_KW])
def test_the_browser_ranks_by_energy_as_python_does(page, site: Path, server: str, by: str) -> None:
    page.goto(server + "capacity/index.html")
    page.select_option("#ranking-form [name=context]", "8192")
    page.select_option("#ranking-form [name=by]", by)
    runs = [ranked_run(load_bundle(p)) for p in sorted(site.glob("runs/*/bundle.json"))]
    want = ranking(runs, 8192, CHAT.target, by)
    ids = ",".join(r.id for r in want)
    page.wait_for_function("want => Array.from(document.querySelectorAll('#ranking-table tbody tr')).map(r => r.getAttribute('data-id')).join() === want",
                           arg=ids)
    cells = page.eval_on_selector_all("#ranking-table tbody tr", "rows => rows.map(r => Array.from(r.cells).slice(2).map(c => c.textContent))")
    assert cells == [[r.answer.requests, r.answer.total, r.answer.per_gpu, r.answer.joules, r.answer.per_kw] if r.answer and r.answer.qualified
                     else [r.reason] for r in want]
    assert page.console_errors == []
