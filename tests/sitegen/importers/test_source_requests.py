"""Per-request records of AIPerf, vllm bench serve and GuideLLM, kept beside the imported bundle.

The fixtures (tests/fixtures/peers/, make_fixtures.sh) were written by the tools themselves:
AIPerf's `profile_export.jsonl` beside each summary, `vllm bench serve --save-detailed` files,
GuideLLM reports with their sampled requests. Every record must come through as the tool wrote
it, tagged with the cell the bundle shows its level in, as many per level as the tool's own
summary counts; a records file that is hostile, too big or not JSON lines is one error line and
nothing is written.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.bundle.records import records_path
from runner.bundle.schema import Bundle, DecodeCell, decode_bundle
from runner.bundle.signatures import signature_path, sums_path
from sitegen.cli import main
from sitegen.importers import source_requests
from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from sitegen.importers.source_requests import RECORDS_MAX_BYTES, source_requests_path
from tests.builders import FIGURES, FIXTURES

PEERS = FIXTURES / "peers"
AIPERF_DETAILED = PEERS / "aiperf" / "detailed"
VLLM_DETAILED = sorted((PEERS / "vllm" / "detailed").glob("*.json"))
GUIDELLM_STATUSES = ("successful", "errored", "incomplete")
VLLM_ARRAYS = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors")


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def imported(paths: list[Path], out: Path, **options: object) -> tuple[Bundle, list[dict]]:
    """Import the files into `out`: the one bundle, and its source requests as parsed lines."""
    written, errors = import_files(paths, out, ImportOptions(**options))
    assert not errors, [e.line() for e in errors]
    [path] = written
    with gzip.open(source_requests_path(path), "rb") as handle:
        return decode_bundle(path.read_bytes()), [json.loads(line) for line in handle]


def cell_of(bundle: Bundle, mean_input: float, concurrency: int) -> DecodeCell:
    """The bundle's cell of a level: its concurrency, its mean input length as prompt tokens."""
    [cell] = [c for c in bundle.decode if c.concurrency == concurrency and c.prompt_tokens == round(mean_input)]
    return cell


def aiperf_level(export: Path) -> tuple[float, int, int, int]:
    """An AIPerf summary's mean input length, profiling concurrency, and completed and failed requests."""
    d = read(export)
    [phase] = [p for p in d["input_config"]["phases"] if p["kind"] == "profiling"]
    failed = d["error_request_count"]["avg"] if "error_request_count" in d else 0
    return d["input_sequence_length"]["avg"], phase["concurrency"], int(d["request_count"]["avg"]), int(failed)


@pytest.mark.parametrize("folder", [AIPERF_DETAILED, PEERS / "aiperf" / "detailed-errors"], ids=["sweep", "errors"])
def test_aiperf_records_are_kept_as_written_each_tagged_with_its_cell(folder: Path, tmp_path: Path) -> None:
    exports = sorted(folder.rglob("profile_export_aiperf.json"))
    bundle, lines = imported([folder], tmp_path / "runs")
    assert len(bundle.decode) == len(exports)
    kept = 0
    for export in exports:
        mean_input, concurrency, completed, failed = aiperf_level(export)
        cell = cell_of(bundle, mean_input, concurrency)
        assert cell.completed == completed
        jsonl = export.with_name("profile_export.jsonl")
        written = [json.loads(line) for line in jsonl.read_text().splitlines()]
        mine = [line for line in lines if line["file"] == f"{export.parent.name}/profile_export.jsonl"]
        assert [line["record"] for line in mine] == written, "every record, in the order AIPerf wrote them"
        assert {(line["context"], line["concurrency"]) for line in mine} == {(cell.context_tokens, cell.concurrency)}
        assert len(mine) == completed + failed, "as many records as the summary counts requests"
        assert sum("error" in line["record"] for line in mine) == failed
        kept += len(mine)
    assert kept == len(lines)
    FIGURES.append(f"AIPerf {folder.name}: {kept} request records kept in "
                   f"{source_requests_path(tmp_path / 'runs' / f'{bundle.id}.json').stat().st_size:,} bytes gzip'd")


def test_aiperf_records_are_embedded_byte_for_byte(tmp_path: Path) -> None:
    written, _ = import_files([AIPERF_DETAILED], tmp_path, ImportOptions())
    raw = gzip.decompress(source_requests_path(written[0]).read_bytes())
    for jsonl in AIPERF_DETAILED.rglob("profile_export.jsonl"):
        for line in jsonl.read_bytes().splitlines():
            assert b',"record":' + line + b"}\n" in raw


@pytest.mark.parametrize("paths", [VLLM_DETAILED, [PEERS / "vllm" / "errors.json"]], ids=["sweep", "errors"])
def test_vllm_detailed_arrays_are_one_record_a_request_tagged_with_its_cell(paths: list[Path], tmp_path: Path) -> None:
    bundle, lines = imported(paths, tmp_path / "runs")
    assert len(bundle.decode) == len(paths)
    for path in paths:
        d = read(path)
        cell = cell_of(bundle, d["total_input_tokens"] / d["completed"], d["max_concurrency"])
        mine = [line for line in lines if line["file"] == f"{path.parent.name}/{path.name}"]
        assert len(mine) == d["num_prompts"] == d["completed"] + d["failed"]
        assert {(line["context"], line["concurrency"]) for line in mine} == {(cell.context_tokens, cell.concurrency)}
        for index, line in enumerate(mine):
            assert line["record"] == {name: d[name][index] for name in VLLM_ARRAYS}
        assert sum(bool(line["record"]["errors"]) for line in mine) == d["failed"]
    assert sum(read(path)["num_prompts"] for path in paths) == len(lines)


def test_a_guidellm_request_that_is_not_an_object_is_one_error_line_naming_it(tmp_path: Path) -> None:
    data = read(PEERS / "guidellm" / "errors.json")
    data["benchmarks"][0]["requests"]["incomplete"].append(["\x1b[2J", 42])
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    at = len(data["benchmarks"][0]["requests"]["incomplete"]) - 1
    assert import_cli(tmp_path, path) == f"error: {path}:$.benchmarks[0].requests.incomplete[{at}]: expected an object\n"


@pytest.mark.parametrize("paths", [
    sorted((PEERS / "vllm" / "held-back").glob("*.json")), [PEERS / "vllm" / "sweep"],
    [PEERS / "aiperf" / "sweep"],
], ids=["vllm-without-save-detailed", "vllm-sweep", "aiperf-summary-only"])
def test_results_without_per_request_records_write_the_bundle_alone(paths: list[Path], tmp_path: Path) -> None:
    written, errors = import_files(paths, tmp_path, ImportOptions(id="run"))
    assert not errors and [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_guidellm_report_that_kept_no_requests_writes_the_bundle_alone(tmp_path: Path) -> None:
    data = read(PEERS / "guidellm" / "errors.json")
    for benchmark in data["benchmarks"]:
        benchmark["requests"] = {status: [] for status in GUIDELLM_STATUSES}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    written, errors = import_files([path], tmp_path / "runs", ImportOptions(id="run"))
    assert not errors and [p.name for p in (tmp_path / "runs").iterdir()] == ["run.json"]


@pytest.mark.parametrize("paths", [sorted((PEERS / "guidellm" / "sweep").glob("*.json")), [PEERS / "guidellm" / "errors.json"]],
                         ids=["sweep", "errors"])
def test_guidellm_requests_are_kept_as_written_each_tagged_with_its_cell(paths: list[Path], tmp_path: Path) -> None:
    bundle, lines = imported(paths, tmp_path / "runs")
    kept = 0
    for path in paths:
        mine = [line for line in lines if line["file"] == f"{path.parent.name}/{path.name}"]
        for benchmark in read(path)["benchmarks"]:
            m, strategy = benchmark["metrics"], benchmark["config"]["strategy"]
            cell = cell_of(bundle, m["prompt_token_count"]["successful"]["mean"], strategy["streams"])
            written = [r for status in GUIDELLM_STATUSES for r in benchmark["requests"][status]]
            assert written, "the fixtures keep a sample of each benchmark's requests"
            ours = [line["record"] for line in mine if (line["context"], line["concurrency"]) == (cell.context_tokens, cell.concurrency)]
            assert ours == written, "every request the report kept, successful, errored then incomplete, as written"
            sample = benchmark["config"]["sample_size"]
            for status in GUIDELLM_STATUSES:
                assert len(benchmark["requests"][status]) == min(sample, m["request_totals"][status]), "GuideLLM's own sample"
            kept += len(ours)
    assert kept == len(lines) > 0
    assert any(line["record"]["info"]["error"] for line in lines)
    FIGURES.append(f"GuideLLM {', '.join(p.name for p in paths)}: {kept} request records kept in "
                   f"{source_requests_path(tmp_path / 'runs' / f'{bundle.id}.json').stat().st_size:,} bytes gzip'd")


def aiperf_copy(tmp_path: Path) -> Path:
    """A copy of the detailed AIPerf folder, to be damaged."""
    folder = tmp_path / "detailed"
    shutil.copytree(AIPERF_DETAILED, folder)
    return folder


def import_cli(tmp_path: Path, *sources: Path) -> str:
    """`sitegen import` of the sources into tmp_path/runs, which must fail: its output."""
    result = CliRunner().invoke(main, ["import", "--out", str(tmp_path / "runs"), *map(str, sources)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output  # an error line, no traceback
    assert not (tmp_path / "runs").exists(), "nothing is written"
    return result.output


@pytest.mark.parametrize(("line", "message"), [
    (b'{"metadata": {"x_request_id": "a"}, "metrics": ', "invalid JSON: Input data was truncated"),
    (b'{"metrics": 1, "note": "\x1b[2J\x1b]0;owned\x07"}', "invalid JSON: JSON is malformed: invalid character (byte 24)"),
    (b"\xff\xfe{}", "invalid JSON: JSON is malformed: invalid character (byte 0)"),
    (b'["metadata", "metrics"]', "not a JSON object: each line holds one request's record"),
    (b"42", "not a JSON object: each line holds one request's record"),
    (b'{"metrics": NaN}', "invalid JSON: JSON is malformed: invalid character (byte 12)"),
    (b'{"a":' * 5000 + b"1" + b"}" * 5000, "invalid JSON: maximum recursion depth exceeded while deserializing an object"),
    (b'{"a":' + b"[" * 700 + b"]" * 700 + b"}", "nested too deeply to check for secrets"),
], ids=["truncated", "terminal-escapes", "not-utf8", "array", "number", "nan", "nested", "nested-within-json"])
def test_a_bad_line_of_records_is_one_error_line_naming_it_and_nothing_is_written(line: bytes, message: str, tmp_path: Path) -> None:
    folder = aiperf_copy(tmp_path)
    jsonl = folder / "in256-c2" / "profile_export.jsonl"
    good = jsonl.read_bytes().splitlines()
    jsonl.write_bytes(b"\n".join([good[0], line, *good[1:]]) + b"\n")
    assert import_cli(tmp_path, folder) == f"error: {jsonl}:line 2: {message}\n"


def test_blank_lines_between_records_are_skipped(tmp_path: Path) -> None:
    folder = aiperf_copy(tmp_path)
    jsonl = folder / "in256-c1" / "profile_export.jsonl"
    jsonl.write_bytes(b"\n\r\n".join(jsonl.read_bytes().splitlines()) + b"\n\n")
    _, lines = imported([folder], tmp_path / "runs")
    assert len(lines) == sum(aiperf_level(p)[2] for p in folder.rglob("profile_export_aiperf.json"))


def test_records_over_the_limit_are_refused_before_they_are_read(tmp_path: Path) -> None:
    folder = aiperf_copy(tmp_path)
    jsonl = folder / "in1024-c2" / "profile_export.jsonl"
    with jsonl.open("r+b") as handle:
        handle.truncate(RECORDS_MAX_BYTES + 1)  # sparse: as big as it says, without the disk it would take
    assert import_cli(tmp_path, folder) == (
        f"error: {jsonl}: {RECORDS_MAX_BYTES + 1:,} bytes of per-request records, more than the {RECORDS_MAX_BYTES:,} "
        "an import keeps: move it away to import the results without it\n")


def test_vllm_arrays_over_the_limit_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_requests, "RECORDS_MAX_BYTES", 2000)
    source = PEERS / "vllm" / "errors.json"
    output = import_cli(tmp_path, source)
    assert output.startswith(f"error: {source}:$: ") and output.count("\n") == 1
    assert output.endswith("bytes of per-request records, more than the 2,000 an import keeps: "
                           "save the result without --save-detailed to import it\n")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["ttfts"].pop(), "$.ttfts: 11 entries"),
    (lambda d: d.update(itls={"0": []}), "$.itls: not an array"),
    (lambda d: d.update(generated_texts=[*d["generated_texts"], "one more"]), "$.generated_texts: 13 entries"),
], ids=["short", "not-array", "long"])
def test_vllm_arrays_of_another_length_are_refused_at_the_array(edit: object, message: str, tmp_path: Path) -> None:
    data = read(PEERS / "vllm" / "errors.json")
    edit(data)
    path = tmp_path / "errors.json"
    path.write_text(json.dumps(data))
    assert import_cli(tmp_path, path) == (f"error: {path}:{message}, but the run sent 12 requests (num_prompts): "
                                          "--save-detailed writes one entry a request\n")


def test_one_bad_records_file_stops_the_whole_sweep(tmp_path: Path) -> None:
    folder = aiperf_copy(tmp_path)
    (folder / "in1024-c2" / "profile_export.jsonl").write_bytes(b"[]\n")
    written, errors = import_files([folder], tmp_path / "runs", ImportOptions(id="x"))
    assert not written and [e.where for e in errors] == ["line 1"]
    assert not (tmp_path / "runs").exists()


def test_a_bundle_that_cannot_be_written_leaves_no_records(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    (out / "x.json").mkdir(parents=True)  # the bundle's name taken by a folder: its write fails
    written, errors = import_files([AIPERF_DETAILED], out, ImportOptions(id="x"), replace=True)
    assert not written and len(errors) == 1 and errors[0].line().startswith(f"{out}: cannot write x.json here: ")
    assert sorted(p.name for p in out.iterdir()) == ["x.json"]


def test_replacing_a_run_removes_what_the_old_run_had_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    imported([AIPERF_DETAILED], out, id="x")
    bundle = out / "x.json"
    for stale in (records_path(bundle), signature_path(bundle), signature_path(records_path(bundle)), sums_path(bundle),
                  signature_path(source_requests_path(bundle))):
        stale.write_bytes(b"another run's")
    written, errors = import_files([PEERS / "aiperf" / "sweep"], out, ImportOptions(id="x"), replace=True)
    assert not errors and sorted(p.name for p in out.iterdir()) == ["x.json"]


def test_replacing_a_run_with_records_keeps_only_the_new_records(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    imported([AIPERF_DETAILED], out, id="x")
    written, errors = import_files(VLLM_DETAILED, out, ImportOptions(id="x"), replace=True)
    assert not errors and sorted(p.name for p in out.iterdir()) == ["x.json", "x.source-requests.jsonl.gz"]
    with gzip.open(source_requests_path(out / "x.json"), "rb") as handle:
        assert {json.loads(line)["file"] for line in handle} == {f"detailed/{p.name}" for p in VLLM_DETAILED}


def test_the_file_is_the_same_bytes_for_the_same_import(tmp_path: Path) -> None:
    first, _ = import_files([AIPERF_DETAILED], tmp_path / "a", ImportOptions(id="x"))
    second, _ = import_files([AIPERF_DETAILED], tmp_path / "b", ImportOptions(id="x"))
    assert source_requests_path(first[0]).read_bytes() == source_requests_path(second[0]).read_bytes()
