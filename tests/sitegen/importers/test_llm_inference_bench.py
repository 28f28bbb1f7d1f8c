"""llm-inference-bench import: every cell checked against the real file, detection by content, strict errors."""

from __future__ import annotations

import copy
import datetime as dt
import json
import shutil
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from runner.bundle.schema import Bundle, DecodeCell, decode_bundle
from sitegen.cli import main
from sitegen.errors import InputError
from sitegen.importers.options import ImportOptions
from sitegen.importers.registry import import_file
from tests.builders import FIXTURES, SEEDS
from tests.sample_site import sample_file

FIXTURE = FIXTURES / "llm-inference-bench-0.4.18.json"
SOURCE = json.loads(FIXTURE.read_text())
VALUE_FIELDS = ("total_tok_s", "per_request_tok_s", "ttft_ms", "tbt_ms", "avg_active", "completed", "output_tokens", "measured_s")


def run_import(data: dict, tmp_path: Path, options: ImportOptions | None = None) -> Bundle:
    """Write data as a file and import it the way `sitegen import` does."""
    path = tmp_path / "benchmark_results.json"
    path.write_text(json.dumps(data))
    return import_file(path, options or ImportOptions())


def cell_of(bundle: Bundle, context: int, concurrency: int) -> DecodeCell:
    """The one decode cell at (context, concurrency)."""
    [cell] = [c for c in bundle.decode if (c.context_tokens, c.concurrency) == (context, concurrency)]
    return cell


def mutated(edit) -> dict:
    """A deep copy of the fixture changed by edit(data)."""
    data = copy.deepcopy(SOURCE)
    edit(data)
    return data


@pytest.fixture(scope="module")
def bundle() -> Bundle:
    return import_file(FIXTURE, ImportOptions())


@pytest.mark.parametrize("result", SOURCE["results"], ids=lambda r: f"{r['context_tokens']}x{r['concurrency']}")
def test_each_measured_cell_matches_its_result(bundle: Bundle, result: dict) -> None:
    cell = cell_of(bundle, result["context_tokens"], result["concurrency"])
    queued = result["capacity_limited"] or result["max_queue_reqs"] > 0
    assert cell.status == ("Requests queued" if queued else "Valid")
    assert cell.total_tok_s == result["aggregate_tps"]
    assert cell.per_request_tok_s == result["output_tps_per_user_p50"]
    assert cell.ttft_ms == pytest.approx(result["ttft_p50"] * 1000)
    assert cell.tbt_ms == pytest.approx(result["inter_token_latency_p50"] * 1000)
    assert cell.avg_active == result["avg_running_reqs"]
    assert cell.completed == result["completed_request_count"]
    assert cell.output_tokens == result["total_tokens"]
    assert cell.measured_s == result["measurement_seconds"]
    assert cell.prompt_tokens == round(result["input_seq_len_avg"])
    assert cell.error is None


def test_capacity_limited_cell_is_requests_queued_with_values(bundle: Bundle) -> None:
    limited = [r for r in SOURCE["results"] if r["capacity_limited"]]
    assert limited, "the fixture has a capacity-limited cell"
    for result in limited:
        cell = cell_of(bundle, result["context_tokens"], result["concurrency"])
        assert cell.status == "Requests queued"
        assert cell.total_tok_s == result["aggregate_tps"] and cell.ttft_ms is not None


def test_planned_cells_without_results_are_over_capacity(bundle: Bundle) -> None:
    meta = SOURCE["metadata"]
    measured = {(r["context_tokens"], r["concurrency"]) for r in SOURCE["results"]}
    planned = {(c, n) for c in meta["context_lengths"] for n in meta["concurrency_levels"]}
    skipped = planned - measured
    assert skipped == {(4096, 8)}
    for context, concurrency in skipped:
        assert concurrency * (context + meta["max_tokens"]) > meta["max_total_tokens"]
        assert str(concurrency) not in SOURCE["summary_table"][str(context)]
        cell = cell_of(bundle, context, concurrency)
        assert cell.status == "Over capacity"
        assert all(getattr(cell, f) is None for f in VALUE_FIELDS)
    assert len(bundle.decode) == len(planned)


@pytest.mark.parametrize("key", sorted(SOURCE["prefill"]))
def test_each_prefill_point_matches_the_file(bundle: Bundle, key: str) -> None:
    entry = SOURCE["prefill"][key]
    [point] = [p for p in bundle.prefill if p.context_tokens == int(key)]
    assert point.status == "Valid"
    assert point.prompt_tok_s == entry["tok_per_sec"]
    assert point.ttft_ms == pytest.approx(entry["ttft_seconds"] * 1000)
    assert point.prompt_tokens == entry["prompt_tokens"]


def test_metadata_fills_the_bundle(bundle: Bundle) -> None:
    meta = SOURCE["metadata"]
    assert bundle.model == bundle.run.served_model == meta["model"]
    assert bundle.engine.name == meta["engine"]
    assert any(f"startup engine vLLM {bundle.engine.version} models=" in e for e in SOURCE["event_log"])
    assert bundle.run.benchmark_tool == f"llm-inference-bench v{meta['version']}"
    assert bundle.run.decode_test == "Fixed duration"
    assert bundle.run.prefill_mode == "Measured during decode warm-up"
    assert bundle.run.seconds_per_measurement == meta["duration_per_test"]
    assert bundle.run.max_output_tokens == meta["max_tokens"]
    assert bundle.measured_at == dt.datetime.fromisoformat(meta["timestamp"]).replace(tzinfo=dt.timezone.utc)
    assert bundle.origin == "llm-inference-bench import"
    assert bundle.hardware.os == "linux"
    assert (bundle.hardware.gpu, bundle.hardware.gpu_count, bundle.engine.quantization, bundle.launch_command) == (None,) * 4
    assert bundle.id == "demo-model-vllm-2026-11-29"


def test_options_fill_what_the_file_lacks(tmp_path: Path) -> None:
    options = ImportOptions(gpu="H200 SXM", gpu_count=1, vram_per_gpu_gb=141, hardware_type="Discrete GPU", quantization="FP8", launch_command="vllm serve demo", origin="lab", submitter="@me", model="Demo")
    bundle = run_import(SOURCE, tmp_path, options)
    assert (bundle.hardware.gpu, bundle.hardware.gpu_count, bundle.hardware.vram_per_gpu_gb, bundle.hardware.type) == ("H200 SXM", 1, 141, "Discrete GPU")
    assert (bundle.engine.quantization, bundle.launch_command, bundle.origin, bundle.submitter) == ("FP8", "vllm serve demo", "lab", "@me")
    assert (bundle.model, bundle.run.served_model) == ("Demo", SOURCE["metadata"]["model"])
    assert bundle.id == "demo-h200-sxm-vllm-2026-11-29"
    assert run_import(SOURCE, tmp_path, ImportOptions(id="my-run")).id == "my-run"


def test_looped_cell_keeps_no_figures(tmp_path: Path) -> None:
    bundle = run_import(mutated(lambda d: d["results"][0].update(loop_detected=True, aggregate_tps=-3.0)), tmp_path)
    result = SOURCE["results"][0]
    cell = cell_of(bundle, result["context_tokens"], result["concurrency"])
    assert (cell.status, cell.completed, cell.output_tokens) == ("Looped", 0, 0)
    assert all(getattr(cell, f) is None for f in VALUE_FIELDS if f not in ("completed", "output_tokens"))


def test_errored_cell_is_failed_with_its_reason(tmp_path: Path) -> None:
    bundle = run_import(mutated(lambda d: d["results"][1].update(error="HTTP 500: engine died")), tmp_path)
    result = SOURCE["results"][1]
    cell = cell_of(bundle, result["context_tokens"], result["concurrency"])
    assert (cell.status, cell.error, cell.total_tok_s) == ("Failed", "HTTP 500: engine died", None)


def test_cell_with_only_request_errors_is_failed(tmp_path: Path) -> None:
    bundle = run_import(mutated(lambda d: d["results"][2].update(num_errors=4, total_tokens=0, timeout_reason="")), tmp_path)
    assert cell_of(bundle, 1024, 2).error == "4 request errors and no output tokens"


def test_missing_cell_that_fits_the_budget_is_failed_not_over_capacity(tmp_path: Path) -> None:
    bundle = run_import(mutated(lambda d: d["results"].pop(2)), tmp_path)
    cell = cell_of(bundle, 1024, 2)
    assert cell.status == "Failed" and "fits the KV budget" in cell.error


def test_context_zero_is_left_out_with_a_note(tmp_path: Path) -> None:
    def add_zero(d: dict) -> None:
        d["metadata"]["context_lengths"].insert(0, 0)
        d["results"].append({**d["results"][0], "context_tokens": 0})
    bundle = run_import(mutated(add_zero), tmp_path)
    assert all(c.context_tokens > 0 for c in bundle.decode) and "Context-0" in bundle.notes


def test_timestamp_with_offset_is_converted_to_utc(tmp_path: Path) -> None:
    bundle = run_import(mutated(lambda d: d["metadata"].update(timestamp="2026-11-29T19:45:36+02:00")), tmp_path)
    assert bundle.measured_at == dt.datetime(2026, 11, 29, 17, 45, 36, tzinfo=dt.timezone.utc)


def test_detected_by_content_not_by_name(tmp_path: Path) -> None:
    renamed = tmp_path / "results.txt"
    shutil.copy(FIXTURE, renamed)
    assert len(import_file(renamed, ImportOptions()).decode) == 6


def test_other_json_fails_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"metadata": {"name": "x"}, "rows": []}))
    with pytest.raises(InputError) as caught:
        import_file(path, ImportOptions())
    assert "\n" not in caught.value.line() and "unknown JSON format" in caught.value.line()


def test_cli_writes_a_bundle_that_decodes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["import", str(FIXTURE), "--out", str(out), "--gpu", "H200 SXM", "--gpu-count", "1"])
    assert result.exit_code == 0, result.output
    [written] = out.glob("*.json")
    bundle = decode_bundle(written.read_bytes())
    assert (bundle.hardware.gpu, bundle.hardware.gpu_count, written.stem) == ("H200 SXM", 1, bundle.id)
    assert [c.status for c in bundle.decode].count("Over capacity") == 1


def set_path(data: dict, keys: tuple, value: object) -> None:
    """Set data[k0][k1]... = value."""
    for key in keys[:-1]:
        data = data[key]
    data[keys[-1]] = value


def drop_path(data: dict, keys: tuple) -> None:
    """Delete data[k0][k1]...."""
    for key in keys[:-1]:
        data = data[key]
    del data[keys[-1]]


BAD_FILES = [
    (lambda d: set_path(d, ("results", 3, "aggregate_tps"), "fast"), "$.results[3].aggregate_tps: expected a number or null"),
    (lambda d: set_path(d, ("results", 0, "ttft_p50"), None), "$.results[0].ttft_p50: expected a number"),
    (lambda d: drop_path(d, ("results", 1, "output_tps_per_user_p50")), "$.results[1]: Object missing required field `output_tps_per_user_p50`"),
    (lambda d: set_path(d, ("results", 2, "capacity_limited"), "no"), "$.results[2].capacity_limited: expected true or false or null"),
    (lambda d: set_path(d, ("results", 4, "total_tokens"), 3.5), "$.results[4].total_tokens: expected a whole number"),
    (lambda d: set_path(d, ("results", 0, "measurement_seconds"), -1), "$.results[0].measurement_seconds: expected a number >= 0.0"),
    (lambda d: set_path(d, ("metadata", "version"), 418), "$.metadata.version: expected a string"),
    (lambda d: drop_path(d, ("metadata", "max_tokens")), "$.metadata: Object missing required field `max_tokens`"),
    (lambda d: set_path(d, ("metadata", "decode_mode"), "vibes"), "$.metadata.decode_mode: Invalid enum value 'vibes'"),
    (lambda d: set_path(d, ("metadata", "timestamp"), "yesterday"), "$.metadata.timestamp: expected an ISO date"),
    (lambda d: set_path(d, ("prefill", "1024", "tok_per_sec"), [1]), "$.prefill.1024.tok_per_sec: expected a number"),
    (lambda d: set_path(d, ("summary_table", "1024", "2"), "89"), "$.summary_table.1024.2: expected a number or null"),
    (lambda d: drop_path(d, ("results",)), "$: Object missing required field `results`"),
    (lambda d: set_path(d, ("results",), {}), "$.results: expected a list"),
]


@pytest.mark.parametrize(("edit", "expected"), BAD_FILES, ids=[e for _, e in BAD_FILES])
def test_bad_file_gives_one_line_naming_the_field(tmp_path: Path, edit, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(mutated(edit)))
    result = CliRunner().invoke(main, ["import", str(path), "--out", str(tmp_path / "runs")])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith(f"error: {path}:{expected}"), result.output
    assert "Traceback" not in result.output and not (tmp_path / "runs").exists()


OVERRIDES = {
    "--model": ("model",), "--submitter": ("submitter",), "--origin": ("origin",),
    "--gpu": ("hardware", "gpu"), "--hardware-type": ("hardware", "type"), "--os": ("hardware", "os"),
    "--engine-name": ("engine", "name"), "--engine-version": ("engine", "version"), "--quantization": ("engine", "quantization"),
    "--backend": ("engine", "backend"), "--repository": ("engine", "repository"), "--build": ("engine", "build"),
    "--commit": ("engine", "commit"), "--served-model": ("run", "served_model"), "--revision": ("run", "revision"),
    "--launch-command": ("launch_command",),
}
SOURCES = [FIXTURE, SEEDS[0], None]  # None: a sample run's bundle file, written for the test


def field_at(bundle: dict, keys: tuple) -> object:
    """bundle[k0][k1]...."""
    for key in keys:
        bundle = bundle[key]
    return bundle


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name if p else "sample bundle")
def test_every_metadata_option_lands_in_the_bundle(tmp_path: Path, source: Path | None) -> None:
    source = source or sample_file(tmp_path / "in")
    given = {flag: f"given {flag[2:]}" for flag in OVERRIDES}
    numbers = {"--gpu-count": "3", "--vram-per-gpu-gb": "96.5"}
    args = [part for flag, value in {**given, **numbers}.items() for part in (flag, value)]
    result = CliRunner().invoke(main, ["import", str(source), "--out", str(tmp_path), "--id", "overridden", *args])
    assert result.exit_code == 0, result.output
    bundle = json.loads((tmp_path / "overridden.json").read_text())
    assert {flag: field_at(bundle, keys) for flag, keys in OVERRIDES.items()} == given
    assert (bundle["hardware"]["gpu_count"], bundle["hardware"]["vram_per_gpu_gb"]) == (3, 96.5)


def test_tail_percentiles_come_from_the_file_where_it_has_them(bundle: Bundle, tmp_path: Path) -> None:
    measured = [r for r in SOURCE["results"] if r.get("aggregate_tps") and not r.get("loop_detected") and not r.get("error")]
    assert measured
    for result in measured:
        cell = cell_of(bundle, result["context_tokens"], result["concurrency"])
        assert cell.ttft_p90_ms == pytest.approx(result["ttft_p90"] * 1000)
        assert cell.ttft_p99_ms == pytest.approx(result["ttft_p99"] * 1000)
        assert cell.tbt_p90_ms == pytest.approx(result["inter_token_latency_p90"] * 1000)
        assert cell.tbt_p99_ms == pytest.approx(result["inter_token_latency_p99"] * 1000)
        assert cell.ttft_ms <= cell.ttft_p90_ms <= cell.ttft_p99_ms
    older = run_import(mutated(lambda d: [r.pop(k, None) for r in d["results"] for k in ("ttft_p90", "ttft_p99")]), tmp_path)
    assert all(c.ttft_p90_ms is msgspec.UNSET and c.ttft_p99_ms is msgspec.UNSET for c in older.decode)
