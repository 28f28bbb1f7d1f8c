"""Exports: measurement CSV, run list JSON/CSV and the Atom feed; exact, deterministic, injection-safe."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import xml.etree.ElementTree as ET

import msgspec
import pytest

from runner.bundle.schema import STATUSES
from runner.bundle.terminal_text import printable
from sitegen.figures.summary import RunSummary, summarize
from sitegen.pages.exports import (
    MEASUREMENT_COLUMNS,
    atom_feed,
    csv_cell,
    measurements_csv,
    run_list_json,
    run_list_record,
    run_list_row,
    runs_csv,
    runs_json,
    status_column,
)
from sitegen.views.index_view import newest_first
from tests.builders import HOSTILE, INVALID_ENERGY_CELL, make_bundle, make_served_bundle
from tests.sample_site import sample_runs

ATOM = "{http://www.w3.org/2005/Atom}"
UPDATED = dt.datetime(2026, 10, 1, 12, 0, tzinfo=dt.timezone.utc)
NUMBER_COLUMNS = MEASUREMENT_COLUMNS[4:12]


def read_csv(text: str) -> list[dict[str, str]]:
    """Parse CSV text into dict rows."""
    return list(csv.DictReader(io.StringIO(text, newline="")))


def run_lists(summaries: list[RunSummary]) -> tuple[bytes, bytes]:
    """runs.json and runs.csv as the build makes them: each run's record and line, joined by id."""
    by_id = sorted(summaries, key=lambda s: s.id)
    return b"".join(runs_json([run_list_json(s) for s in by_id])), b"".join(runs_csv([run_list_row(s) for s in by_id]))


def number(text: str) -> float | None:
    """A CSV number field back to a number ('' is None)."""
    return float(text) if text else None


def test_measurements_round_trip_to_the_bundle_numbers() -> None:
    bundle = make_bundle()
    rows = read_csv(measurements_csv(bundle))
    assert list(rows[0]) == list(MEASUREMENT_COLUMNS)
    prefill, decode = rows[: len(bundle.prefill)], rows[len(bundle.prefill) :]
    assert len(decode) == len(bundle.decode)
    for row, point in zip(prefill, sorted(bundle.prefill, key=lambda p: p.context_tokens)):
        assert (row["phase"], int(row["context_tokens"]), row["concurrency"]) == ("prefill", point.context_tokens, "1")
        assert (number(row["total_tok_s"]), number(row["ttft_ms"])) == (point.prompt_tok_s, point.ttft_ms)
    cells = sorted(bundle.decode, key=lambda c: (c.context_tokens, c.concurrency))
    for row, cell in zip(decode, cells):
        assert (row["phase"], int(row["context_tokens"]), int(row["concurrency"]), row["status"]) == (
            "decode", cell.context_tokens, cell.concurrency, cell.status
        )
        assert [number(row[k]) for k in NUMBER_COLUMNS] == [getattr(cell, k) for k in NUMBER_COLUMNS]
        assert row["error"] == (cell.error or "")


def test_measurements_of_the_sample_runs_round_trip() -> None:
    for bundle in sample_runs():
        rows = [r for r in read_csv(measurements_csv(bundle)) if r["phase"] == "decode"]
        totals = {(int(r["context_tokens"]), int(r["concurrency"])): number(r["total_tok_s"]) for r in rows}
        assert totals == {(c.context_tokens, c.concurrency): c.total_tok_s for c in bundle.decode}, bundle.id


SERVING_COLUMNS = ("acceptance_rate", "mean_acceptance_length", "joules_per_output_token", "joules_per_token",
                   "mean_watts_per_gpu", "energy_valid")


def test_measurements_end_with_the_speculative_and_energy_columns_empty_where_a_cell_has_none() -> None:
    assert MEASUREMENT_COLUMNS[-len(SERVING_COLUMNS):] == SERVING_COLUMNS, "after the columns readers had"
    bundle = make_served_bundle()
    rows = {(r["phase"], int(r["context_tokens"]), int(r["concurrency"])): r for r in read_csv(measurements_csv(bundle))}
    for cell in bundle.decode:
        row = rows[("decode", cell.context_tokens, cell.concurrency)]
        if cell.total_tok_s is None:  # the Failed cell has no reading
            assert [row[k] for k in SERVING_COLUMNS] == [""] * 6
            continue
        spec, energy = cell.speculative, cell.energy
        assert (number(row["acceptance_rate"]), number(row["mean_acceptance_length"])) == (spec.acceptance_rate, spec.mean_acceptance_length)
        if (cell.context_tokens, cell.concurrency) == INVALID_ENERGY_CELL:
            assert row["energy_valid"] == "false" and [row[k] for k in SERVING_COLUMNS[2:5]] == ["", "", ""], "no figures of an invalid reading"
        else:
            assert row["energy_valid"] == "true"
            assert [number(row[k]) for k in SERVING_COLUMNS[2:5]] == [energy.joules_per_output_token, energy.joules_per_token, energy.mean_watts_per_gpu]
    assert all(r[k] == "" for (phase, _, _), r in rows.items() if phase == "prefill" for k in SERVING_COLUMNS)
    assert all(r[k] == "" for r in read_csv(measurements_csv(make_bundle())) for k in SERVING_COLUMNS)


def test_run_lists_carry_how_each_run_was_served_after_the_columns_readers_had() -> None:
    served, plain = make_served_bundle("served"), make_bundle("plain")
    summaries = [summarize(served), summarize(plain)]
    records = {r["id"]: r for r in json.loads(run_lists(summaries)[0])}
    valued = [c for c in served.decode if c.status == "Valid"]
    assert {k: records["served"][k] for k in ("api", "speculative_method", "speculative_tokens", "prefill_gpus", "decode_gpus")} == {
        "api": "chat", "speculative_method": "eagle3", "speculative_tokens": 3, "prefill_gpus": 4, "decode_gpus": 8}
    assert records["served"]["best_joules_per_output_token"] == min(c.energy.joules_per_output_token for c in valued if c.energy.valid)
    assert summaries[0].mean_acceptance_length is not None
    assert records["served"]["mean_acceptance_length"] == summaries[0].mean_acceptance_length
    assert all(records["plain"][k] is None for k in ("api", "speculative_method", "mean_acceptance_length", "best_joules_per_output_token", "decode_gpus"))
    text = run_lists(summaries)[1].decode()
    header = text.splitlines()[0].split(",")
    assert header[header.index("bundle_url") + 1:] == ["api", "speculative_method", "speculative_tokens", "mean_acceptance_length",
                                                        "best_joules_per_output_token", "prefill_gpus", "decode_gpus", "verification"]
    rows = {r["id"]: r for r in read_csv(text)}
    assert (rows["served"]["api"], rows["served"]["decode_gpus"], rows["plain"]["api"]) == ("chat", "8", "")
    assert float(rows["served"]["peak_tok_s_per_gpu"]) == summaries[0].peak_tok_s / 8


def test_formula_strings_are_neutralised_but_numbers_are_not() -> None:
    bundle = make_bundle()
    failed = next(c for c in bundle.decode if c.status == "Failed")
    failed.error = "=cmd|' /C calc'!A0"
    bundle.decode.append(failed.__copy__())
    bundle.decode[-1].context_tokens, bundle.decode[-1].error = 999_999, "-2+3"
    errors = [r["error"] for r in read_csv(measurements_csv(bundle)) if r["error"]]
    assert errors == ["'=cmd|' /C calc'!A0", "'-2+3"]


def test_runs_json_lists_summaries_with_relative_links() -> None:
    summaries = [summarize(make_bundle("zeta")), summarize(make_bundle("alpha"))]
    records = json.loads(run_lists(summaries)[0])
    assert [r["id"] for r in records] == ["alpha", "zeta"]
    assert records[0]["url"] == "runs/alpha/index.html"
    assert records[0]["bundle_url"] == "runs/alpha/bundle.json"
    assert records[0]["peak_tok_s"] == summaries[1].peak_tok_s
    assert records[0]["measured_at"] == "2026-09-03T14:23:00Z"


def test_runs_csv_has_a_row_per_run_and_defuses_hostile_names() -> None:
    evil = "=cmd|' /C calc'!A0" + HOSTILE
    summaries = [summarize(make_bundle("evil", model=evil)), summarize(make_bundle("fine", model=HOSTILE))]
    rows = read_csv(run_lists(summaries)[1].decode())
    assert [r["id"] for r in rows] == ["evil", "fine"]
    assert (rows[0]["model"], rows[1]["model"]) == ("'" + evil, HOSTILE)
    assert rows[1]["cells_valid"] == "42" and rows[1]["cells_over_capacity"] == "3"
    assert float(rows[1]["peak_tok_s"]) == summaries[1].peak_tok_s
    assert rows[1]["url"] == "runs/fine/index.html"


def test_exports_are_byte_identical_across_calls() -> None:
    bundles = [make_bundle("a"), make_bundle("b", measured_at=None)]
    summaries = [summarize(b) for b in bundles]
    assert measurements_csv(bundles[0]) == measurements_csv(make_bundle("a"))
    assert run_lists(summaries) == run_lists(summaries[::-1])
    assert atom_feed(bundles, UPDATED) == atom_feed([make_bundle("a"), make_bundle("b", measured_at=None)], UPDATED)


def odd_summaries() -> list[RunSummary]:
    """Summaries with what could tell a join of per-run texts from one encoding of the whole list: hostile and
    non-ASCII text, unknown figures, numbers repr writes in other notations, a formula-like id."""
    plain = summarize(make_bundle("b-plain"))
    return [
        plain,
        msgspec.structs.replace(summarize(make_bundle("a-odd", model=HOSTILE + " \u00e9\u4e2d\n\"q\"", gpu=None, gpu_count=None,
                                                       version=None, measured_at=None)),
                                peak_tok_s=1e16, single_stream_tok_s=1e-05, prefill_8k_tok_s=None),
        msgspec.structs.replace(plain, id="-c=1+1", peak_tok_s=0.1 + 0.2),
    ]


@pytest.mark.parametrize("piece_runs", [1, 2, 1000], ids=["a run a piece", "two runs a piece", "one piece"])
def test_run_lists_joined_per_run_are_what_the_whole_list_encodes(piece_runs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sitegen.pages.exports.PIECE_RUNS", piece_runs)
    summaries = odd_summaries()
    records = [run_list_record(s) for s in sorted(summaries, key=lambda s: s.id)]
    whole_json = msgspec.json.format(msgspec.json.Encoder(order="deterministic").encode(records), indent=2) + b"\n"
    fields = [f.name for f in msgspec.structs.fields(RunSummary)]
    names, later = fields[:fields.index("status_counts")], fields[fields.index("status_counts") + 1:]  # later fields after the links
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(names + [status_column(s) for s in STATUSES] + ["url", "bundle_url"] + later + ["verification"])
    for r in records:
        writer.writerow([csv_cell(v) for v in [r[n] for n in names] + [r["status_counts"][s] for s in STATUSES] + [r["url"], r["bundle_url"]]
                         + [r[n] for n in later] + [r["verification"]]])
    assert run_lists(summaries) == (whole_json, out.getvalue().encode())
    odd = next(r for r in json.loads(whole_json) if r["id"] == "a-odd")
    assert odd["model"].endswith(" \u00e9\u4e2d\n\"q\"") and odd["peak_tok_s"] == 1e16 and odd["gpu"] is None


def test_run_lists_of_no_runs_are_an_empty_list_and_a_header() -> None:
    json_text, csv_text = run_lists([])
    assert json_text == msgspec.json.format(b"[]", indent=2) + b"\n" == b"[]\n"
    assert read_csv(csv_text.decode()) == [] and csv_text.startswith(b"id,model,model_slug,")


def feed_bundles() -> list:
    """Three dated runs out of order and one undated."""
    def at(day: int) -> dt.datetime:
        """A September 2026 date."""
        return dt.datetime(2026, 9, day, tzinfo=dt.timezone.utc)

    return [
        make_bundle("middle", measured_at=at(10)), make_bundle("undated", measured_at=None),
        make_bundle("newest", measured_at=at(20)), make_bundle("oldest", measured_at=at(1)),
    ]


def test_atom_feed_of_the_runs_newest_first_undated_last() -> None:
    bundles = {b.id: b for b in feed_bundles()}
    ordered = [bundles[s.id] for s in newest_first([summarize(b) for b in bundles.values()])]
    root = ET.fromstring(atom_feed(ordered, UPDATED))
    assert root.tag == f"{ATOM}feed"
    assert root.findtext(f"{ATOM}updated") == "2026-10-01T12:00:00Z"
    entries = root.findall(f"{ATOM}entry")
    ids = [e.findtext(f"{ATOM}id") for e in entries]
    assert ids == [f"tag:speed-matrix,2026:runs/{name}" for name in ("newest", "middle", "oldest", "undated")]
    assert [e.findtext(f"{ATOM}updated") for e in entries] == [
        "2026-09-20T00:00:00Z", "2026-09-10T00:00:00Z", "2026-09-01T00:00:00Z", "2026-10-01T12:00:00Z",
    ]
    assert entries[0].find(f"{ATOM}link").get("href") == "runs/newest/index.html"
    assert entries[0].findtext(f"{ATOM}title") == "Ling-3.0-flash-fp4 on H200 NVL 141GB ×2"
    assert root.find(f"{ATOM}link[@rel='self']") is None


def test_atom_feed_escapes_hostile_text() -> None:
    bundle = make_bundle("evil", model=HOSTILE + "\x00\x1b")
    bundle.submitter = '"><x a="'
    text = atom_feed([bundle], UPDATED)
    assert "<img" not in text and "</script>" not in text
    entry = ET.fromstring(text).find(f"{ATOM}entry")
    assert entry.findtext(f"{ATOM}title").startswith(printable(HOSTILE))  # control characters shown as escapes
    assert entry.findtext(f"{ATOM}author/{ATOM}name") == '"><x a="'
