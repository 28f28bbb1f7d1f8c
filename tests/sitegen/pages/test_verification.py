"""Each run's verification on its page, in the index's column and filter, in runs.json and runs.csv, and
`sitegen build --strict`: the checker's verdicts, made when a bundle is read and kept for rebuilds."""

from __future__ import annotations

import csv
import gzip
import html
import json
import re
import shutil
from pathlib import Path

import msgspec
from click.testing import CliRunner

from runner.bundle import formats
from runner.bundle.schema import decode_bundle, encode_bundle
from runner.bundle.signatures import sign
from sitegen.build import build_site
from sitegen.cli import main
from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from sitegen.importers.source_requests import source_requests_path
from tests.builders import make_signing_key, same_as_fresh
from tests.sample_site import LING, MIMO, sample_run, write_content

TAMPERED = MIMO


def verification_of(site: Path, run_id: str) -> str:
    """The run page's verification section, as text."""
    page = (site / "runs" / run_id / "index.html").read_text()
    start = page.index('<section class="verification')
    return html.unescape(re.sub(r"<[^>]+>", "", page[start:page.index("</section>", start)]))


def tampered_run() -> bytes:
    """A sample run with one cell claiming 36,655 tok/s per request from 0.12 requests active."""
    bundle = sample_run(TAMPERED)
    bundle.decode[3].per_request_tok_s, bundle.decode[3].avg_active = 36655.0, 0.12
    return encode_bundle(bundle)


def listed(site: Path) -> dict[str, dict]:
    """runs.json's records by id."""
    return {record["id"]: record for record in json.loads((site / "runs.json").read_text())}


def test_an_inconsistent_run_is_marked_on_its_page_the_index_and_the_run_lists(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    (content / "runs" / f"{TAMPERED}.json").write_bytes(tampered_run())
    build_site(content, tmp_path / "site")
    site = tmp_path / "site"
    mark = verification_of(site, TAMPERED)
    assert "Inconsistent" in mark and f"{TAMPERED}.json:$.decode[3].per_request_tok_s" in mark
    assert "Imported: from another tool (dev)" in verification_of(site, LING)
    index = (site / "index.html").read_text()
    assert '<select name="verification"><option value="">All</option>' in index and "<option>Inconsistent</option>" in index
    chunk = (site / "data" / "runs-0.js").read_text()
    records = json.loads(chunk[chunk.index("["):chunk.rindex("]") + 1])
    assert {r["id"] for r in records if r["verification"] == "Inconsistent"} == {TAMPERED}  # what the filter matches
    assert listed(site)[TAMPERED]["verification"] == "Inconsistent" and listed(site)[LING]["verification"] == "Imported"
    rows = list(csv.reader((site / "runs.csv").open()))
    assert rows[0][-1] == "verification"
    assert {row[0]: row[-1] for row in rows[1:]}[TAMPERED] == "Inconsistent"


def test_an_imported_run_says_whether_its_per_request_records_are_kept_beside_it(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    site = tmp_path / "site"
    build_site(content, site)
    assert "Imported: from another tool (dev)." in verification_of(site, LING)
    kept = source_requests_path(content / "runs" / f"{LING}.json")
    kept.write_bytes(gzip.compress(b'{"cell": "1K x 1"}\n'))
    build_site(content, site)
    assert "Imported: from another tool (dev), with its per-request records." in verification_of(site, LING)
    kept.unlink()
    build_site(content, site)
    assert "Imported: from another tool (dev)." in verification_of(site, LING)


def test_the_plain_text_says_the_verification_and_still_imports_back(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    (content / "runs" / f"{TAMPERED}.json").write_bytes(tampered_run())
    build_site(content, tmp_path / "site")
    text = (tmp_path / "site" / "runs" / TAMPERED / "index.txt").read_text()
    said = text[text.index("\n\nVerification\n\n") + len("\n\nVerification\n\n"):].splitlines()
    page = verification_of(tmp_path / "site", TAMPERED)
    assert said[0].startswith("Inconsistent: ") and said[0] in " ".join(page.split())
    assert said[1:] and all(line in page for line in said[1:]), "each problem the page lists, a line each"
    written, errors = import_files([tmp_path / "site" / "runs" / TAMPERED / "index.txt"], tmp_path / "imported", ImportOptions())
    assert not errors
    imported = decode_bundle(written[0].read_bytes())
    shown = [(c.status, formats.tok_s(c.total_tok_s)) for c in sample_run(TAMPERED).decode]
    assert [(c.status, formats.tok_s(c.total_tok_s)) for c in imported.decode] == shown, "the table's figures as printed"


def test_strict_leaves_inconsistent_runs_out_and_says_how_many(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    (content / "runs" / f"{TAMPERED}.json").write_bytes(tampered_run())
    report = build_site(content, tmp_path / "site", strict=True)
    assert "built 2 runs" in report and "left out 1 inconsistent run (--strict)" in report
    assert not (tmp_path / "site" / "runs" / TAMPERED).exists() and TAMPERED not in listed(tmp_path / "site")


def test_a_run_submitted_twice_is_marked_on_both_pages(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    copy = msgspec.structs.replace(sample_run(MIMO), id="mimo-again")
    (content / "runs" / "mimo-again.json").write_bytes(encode_bundle(copy))
    build_site(content, tmp_path / "site")
    for run_id in (MIMO, "mimo-again"):
        assert "one run submitted twice" in verification_of(tmp_path / "site", run_id)
    (content / "runs" / f"{LING}.json").write_bytes(encode_bundle(msgspec.structs.replace(sample_run(LING), notes="again")))
    build_site(content, tmp_path / "site")  # another run changed: settled again, the copy still found
    assert same_as_fresh(content, tmp_path / "site")
    build_site(content, tmp_path / "site")  # nothing changed: what the last build settled is taken as it was
    assert "one run submitted twice" in verification_of(tmp_path / "site", "mimo-again") and same_as_fresh(content, tmp_path / "site")
    (content / "runs" / "mimo-again.json").unlink()
    build_site(content, tmp_path / "site")
    assert "Unsigned" in verification_of(tmp_path / "site", MIMO)


def test_a_signed_run_says_who_signed_it_and_a_figure_changed_since_says_modified(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    key, allowed = make_signing_key(tmp_path, "alice@example.org")
    shutil.copy(allowed, content / "allowed_signers")
    bundle = content / "runs" / f"{MIMO}.json"
    build_site(content, tmp_path / "site")
    page = tmp_path / "site" / "runs" / MIMO / "index.html"
    other = (tmp_path / "site" / "runs" / LING / "index.html").stat().st_mtime_ns
    assert "Unsigned" in verification_of(tmp_path / "site", MIMO)

    sign([bundle], key)
    report = build_site(content, tmp_path / "site")
    assert "Signed: signed by alice@example.org" in verification_of(tmp_path / "site", MIMO), report
    assert (tmp_path / "site" / "runs" / LING / "index.html").stat().st_mtime_ns == other  # only the signed run's page again
    assert CliRunner().invoke(main, ["check", str(content)]).exit_code == 0

    bundle.write_text(bundle.read_text().replace('"total_tok_s": ', '"total_tok_s": 1', 1))
    build_site(content, tmp_path / "site")
    assert "Modified after signing" in verification_of(tmp_path / "site", MIMO) and page.is_file()
    checked = CliRunner().invoke(main, ["check", str(content)])
    assert checked.exit_code == 1 and "modified after signing" in checked.output
