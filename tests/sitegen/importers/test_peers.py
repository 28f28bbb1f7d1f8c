"""Importing vllm bench serve, GuideLLM and AIPerf results: real files from each tool, read back against the JSON.

The fixtures under tests/fixtures/peers/ were made by running each tool against the simulator
(make_fixtures.sh). The held-back files are read here independently of the importers, with
the mapping spelled out field by field, and every level is compared with its imported cell.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from runner.bundle import display, formats
from runner.bundle.schema import Bundle, DecodeCell, decode_bundle, encode_bundle
from sitegen.build import build_site
from sitegen.cli import main
from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from tests.builders import FIGURES, FIXTURES
from tests.sample_site import write_content

PEERS = FIXTURES / "peers"
# Allowed relative errors of an imported figure against the file's.
TOLERANCE = {"total_tok_s": 0.005, "ttft_ms": 0.01, "per_request_tok_s": 0.02}
Expected = dict[tuple[int, int], dict[str, float | None]]


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def vllm_levels(paths: list[Path]) -> Expected:
    """Each saved result: context = total_input_tokens / completed, per request = 1000 / median TPOT."""
    levels: Expected = {}
    for path in paths:
        d = read(path)
        levels[(round(d["total_input_tokens"] / d["completed"]), d["max_concurrency"])] = {
            "total_tok_s": d["output_throughput"], "ttft_ms": d["median_ttft_ms"], "per_request_tok_s": 1000 / d["median_tpot_ms"],
            "tbt_ms": d["median_itl_ms"], "ttft_p90_ms": d["p90_ttft_ms"], "ttft_p99_ms": d["p99_ttft_ms"],
            "tbt_p90_ms": d["p90_itl_ms"], "tbt_p99_ms": d["p99_itl_ms"], "completed": d["completed"],
            "output_tokens": d["total_output_tokens"], "measured_s": d["duration"],
        }
    return levels


def guidellm_levels(paths: list[Path]) -> Expected:
    """Each concurrent benchmark: streams, output tok/s over all requests, medians of the successful ones."""
    levels: Expected = {}
    for path in paths:
        for b in read(path)["benchmarks"]:
            m = b["metrics"]
            ttft, itl = m["time_to_first_token_ms"]["successful"], m["inter_token_latency_ms"]["successful"]
            levels[(round(m["prompt_token_count"]["successful"]["mean"]), b["config"]["strategy"]["streams"])] = {
                "total_tok_s": m["output_tokens_per_second"]["total"]["mean"], "ttft_ms": ttft["median"],
                "per_request_tok_s": 1000 / m["time_per_output_token_ms"]["successful"]["median"], "tbt_ms": itl["median"],
                "ttft_p90_ms": ttft["percentiles"]["p90"], "ttft_p99_ms": ttft["percentiles"]["p99"],
                "tbt_p90_ms": itl["percentiles"]["p90"], "tbt_p99_ms": itl["percentiles"]["p99"],
                "completed": m["request_totals"]["successful"], "measured_s": b["duration"],
            }
    return levels


def aiperf_levels(paths: list[Path]) -> Expected:
    """Each export: the profiling phase's concurrency, throughputs and p50s as AIPerf wrote them."""
    levels: Expected = {}
    for path in paths:
        d = read(path)
        [phase] = [p for p in d["input_config"]["phases"] if p["kind"] == "profiling"]
        ttft, itl = d["time_to_first_token"], d["inter_token_latency"]
        levels[(round(d["input_sequence_length"]["avg"]), phase["concurrency"])] = {
            "total_tok_s": d["output_token_throughput"]["avg"], "ttft_ms": ttft["p50"],
            "per_request_tok_s": d["output_token_throughput_per_user"]["p50"], "tbt_ms": itl["p50"],
            "ttft_p90_ms": ttft["p90"], "ttft_p99_ms": ttft["p99"], "tbt_p90_ms": itl["p90"], "tbt_p99_ms": itl["p99"],
            "completed": d["request_count"]["avg"], "output_tokens": d["total_output_tokens"]["avg"],
            "measured_s": d["benchmark_duration"]["avg"],
        }
    return levels


HELD_BACK: dict[str, tuple[list[Path], Callable[[list[Path]], Expected]]] = {
    "vllm bench serve": (sorted((PEERS / "vllm" / "held-back").glob("*.json")), vllm_levels),
    "GuideLLM": (sorted((PEERS / "guidellm" / "held-back").glob("*.json")), guidellm_levels),
    "AIPerf": (sorted((PEERS / "aiperf" / "held-back").rglob("profile_export_aiperf.json")), aiperf_levels),
}


def import_one(paths: list[Path], tmp_path: Path, **options: object) -> Bundle:
    """Import the files as `sitegen import` does; exactly one bundle must come out."""
    written, errors = import_files(paths, tmp_path / "runs", ImportOptions(**options))
    assert not errors, [e.line() for e in errors]
    [path] = written
    return decode_bundle(path.read_bytes())


def cells_by_key(bundle: Bundle) -> dict[tuple[int, int], DecodeCell]:
    return {(c.context_tokens, c.concurrency): c for c in bundle.decode}


def cell_for(bundle: Bundle, context: int, concurrency: int) -> DecodeCell:
    """The one cell of a level: its concurrency, its mean input length as prompt tokens, its row within 1 % of that."""
    [cell] = [c for c in bundle.decode if c.concurrency == concurrency and c.prompt_tokens == context]
    assert abs(cell.context_tokens - context) <= 0.01 * context
    return cell


def relative_error(got: float, want: float) -> float:
    return abs(got - want) / abs(want) if want else abs(got)


@pytest.mark.parametrize("tool", HELD_BACK)
def test_held_back_files_import_with_every_level_equal_to_the_file(tool: str, tmp_path: Path) -> None:
    paths, levels_of = HELD_BACK[tool]
    assert len(paths) >= 2, f"the held-back {tool} files are committed"
    expected = levels_of(paths)
    assert len({c for c, _ in expected}) >= 2 and len({n for _, n in expected}) >= 3, "2 input lengths × 3 concurrencies at least"
    bundle = import_one(paths, tmp_path, id="held-back")
    assert len(bundle.decode) == len(expected)
    worst = dict.fromkeys(TOLERANCE, 0.0)
    for key, want in expected.items():
        cell = cell_for(bundle, *key)
        assert cell.status == "Valid" and cell.error is None
        for field, limit in TOLERANCE.items():
            error = relative_error(getattr(cell, field), want[field])
            worst[field] = max(worst[field], error)
            assert error <= limit, f"{key} {field}: {getattr(cell, field)} against {want[field]}"
        for field, value in want.items():
            if field not in TOLERANCE:
                assert getattr(cell, field) == pytest.approx(value, rel=1e-9), f"{key} {field}"
    FIGURES.append(f"{tool} held-back import, worst relative error: " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))


def test_held_back_imports_build_into_run_pages(tmp_path: Path) -> None:
    content = write_content(tmp_path, runs=())
    for tool, (paths, levels_of) in HELD_BACK.items():
        written, errors = import_files(paths, content / "runs", ImportOptions())
        assert not errors and len(written) == 1
    build_site(content, tmp_path / "site")
    for bundle_file in sorted((content / "runs").glob("*.json")):
        bundle = decode_bundle(bundle_file.read_bytes())
        page = (tmp_path / "site" / "runs" / bundle.id / "index.html").read_text()
        assert bundle.run.benchmark_tool and bundle.run.benchmark_tool.split()[0] in page
        for cell in bundle.decode:
            assert formats.tok_s(cell.total_tok_s) in page and formats.ms_whole(cell.ttft_ms) in page
        # These tools send cold prompts: the matrix must not claim the warmed TTFT of the runner's pages.
        text = (tmp_path / "site" / "runs" / bundle.id / "index.txt").read_text()
        assert display.COLD_TTFT_NOTE in text and display.TTFT_NOTE not in text


def test_vllm_bench_sweep_folder_is_one_bundle_with_the_median_run_of_each_level(tmp_path: Path) -> None:
    folder = PEERS / "vllm" / "sweep"
    combinations = sorted({p.parent for p in folder.rglob("run=*.json")})
    assert len(combinations) == 6
    bundle = import_one([folder], tmp_path)
    assert len(bundle.decode) == 6 and "ran some levels 2 times" in (bundle.notes or "")
    for combination in combinations:
        runs = sorted((read(p) for p in combination.glob("run=*.json")), key=lambda d: d["output_throughput"])
        median = runs[0]  # the lower middle of two runs
        cell = cell_for(bundle, round(median["total_input_tokens"] / median["completed"]), median["max_concurrency"])
        assert cell.total_tok_s == median["output_throughput"] and cell.ttft_ms == median["median_ttft_ms"]


def test_several_files_of_one_sweep_make_one_bundle_on_the_command_line(tmp_path: Path) -> None:
    files = sorted((PEERS / "guidellm" / "sweep").glob("*.json"))
    result = CliRunner().invoke(main, ["import", "--id", "guidellm-sweep", "--out", str(tmp_path), "--gpu", "H200", *map(str, files)])
    assert result.exit_code == 0, result.output
    bundle = decode_bundle((tmp_path / "guidellm-sweep.json").read_bytes())
    assert bundle.hardware.gpu == "H200" and bundle.origin == "GuideLLM import"
    assert bundle.run.benchmark_tool.startswith("GuideLLM 0.") and bundle.run.decode_test == "Fixed duration"
    assert cells_by_key(bundle).keys() == guidellm_levels(files).keys()
    assert encode_bundle(decode_bundle(encode_bundle(bundle))) == encode_bundle(bundle)


@pytest.mark.parametrize("path", [PEERS / "vllm" / "errors.json", PEERS / "guidellm" / "errors.json",
                                  PEERS / "aiperf" / "errors" / "profile_export_aiperf.json"], ids=lambda p: p.parent.name)
def test_failed_requests_are_said_beside_the_figures(path: Path, tmp_path: Path) -> None:
    [cell] = import_one([path], tmp_path).decode
    assert cell.status == "Valid" and cell.total_tok_s and cell.error
    assert " requests failed" in cell.error and f"those of the {cell.completed} that completed" in cell.error


def test_a_level_where_every_request_failed_is_failed(tmp_path: Path) -> None:
    data = read(PEERS / "vllm" / "errors.json")
    data.update(completed=0, failed=data["num_prompts"], total_input_tokens=0, output_throughput=0.0)
    path = tmp_path / "all-failed.json"
    path.write_text(json.dumps(data))
    [cell] = import_one([path], tmp_path).decode
    assert cell.status == "Failed" and cell.total_tok_s is None
    assert cell.error.startswith(f"all {data['num_prompts']} requests failed: ")
    assert cell.context_tokens == round(sum(data["input_lens"]) / len(data["input_lens"]))


def test_a_level_where_no_request_completed_is_failed_not_valid(tmp_path: Path) -> None:
    source = PEERS / "guidellm-none-completed.json"
    [stalled] = [b for b in read(source)["benchmarks"] if b["metrics"]["request_totals"]["successful"] == 0]
    cells = cells_by_key(import_one([source], tmp_path))
    cell = cells[(2048, stalled["config"]["strategy"]["streams"])]
    running = stalled["metrics"]["request_totals"]["incomplete"]
    assert cell.status == "Failed" and cell.total_tok_s is None and cell.ttft_ms is None
    assert cell.error == f"no request completed in the 3.0 s the level ran ({running} still running at its end)"
    assert sum(c.status == "Valid" for c in cells.values()) == 2


def test_recognised_by_content_not_by_name(tmp_path: Path) -> None:
    source = next((PEERS / "aiperf" / "sweep").rglob("profile_export_aiperf.json"))
    renamed = tmp_path / "results.txt"
    shutil.copy(source, renamed)
    assert import_one([renamed], tmp_path).origin == "AIPerf import"


def first_file(tool_dir: str) -> Path:
    return sorted(p for p in (PEERS / tool_dir / "sweep").rglob("*.json") if p.name != "summary.json")[0]


def edited(tmp_path: Path, source: Path, edit: Callable[[dict], None], name: str = "edited.json") -> Path:
    data = read(source)
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _drop(keys: tuple) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        for key in keys[:-1]:
            data = data[key]
        del data[keys[-1]]
    return edit


@pytest.mark.parametrize(("tool_dir", "edit", "field", "message"), [
    ("vllm", _drop(("median_itl_ms",)), "$", "Object missing required field `median_itl_ms`"),
    ("guidellm", _drop(("benchmarks", 0, "metrics", "output_tokens_per_second")), "$.benchmarks[0].metrics",
     "Object missing required field `output_tokens_per_second`"),
    ("guidellm", _drop(("benchmarks", 1, "config")), "$.benchmarks[1]", "Object missing required field `config`"),
    ("aiperf", _drop(("input_config", "phases")), "$.input_config", "Object missing required field `phases`"),
    ("aiperf", lambda d: d["time_to_first_token"].update(p50="12 ms"), "$.time_to_first_token.p50", "expected a number"),
], ids=["vllm-field", "guidellm-metric", "guidellm-config", "aiperf-phases", "aiperf-type"])
def test_a_file_from_a_version_whose_fields_differ_is_one_line_naming_the_field(
        tool_dir: str, edit: Callable[[dict], None], field: str, message: str, tmp_path: Path) -> None:
    path = edited(tmp_path, first_file(tool_dir), edit)
    result = CliRunner().invoke(main, ["import", "--out", str(tmp_path / "runs"), str(path)])
    assert result.exit_code == 1
    assert result.output == f"error: {path}:{field}: {message}\n"
    assert not (tmp_path / "runs").exists()


def test_a_damaged_file_stops_the_sweep_and_nothing_is_written(tmp_path: Path) -> None:
    good = sorted((PEERS / "guidellm" / "sweep").glob("*.json"))
    damaged = tmp_path / "damaged.json"
    damaged.write_text(good[1].read_text()[:5000])
    result = CliRunner().invoke(main, ["import", "--id", "x", "--out", str(tmp_path / "runs"), str(good[0]), str(damaged)])
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {damaged}:") and "invalid JSON" in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_files_of_different_models_under_one_id_are_refused(tmp_path: Path) -> None:
    files = sorted((PEERS / "aiperf" / "sweep").rglob("profile_export_aiperf.json"))[:2]
    other = edited(tmp_path, files[1], lambda d: d["input_config"]["models"]["items"][0].update(name="other-model"))
    result = CliRunner().invoke(main, ["import", "--id", "x", "--out", str(tmp_path / "runs"), str(files[0]), str(other)])
    assert result.exit_code == 1
    assert result.output == (f"error: {other}:$.input_config.models.items[0].name: model 'other-model', but {files[0]} "
                             "measured 'sim-model': one run is one model (import each under its own --id)\n")
    assert not (tmp_path / "runs").exists()


def test_files_of_different_tools_under_one_id_are_refused(tmp_path: Path) -> None:
    vllm, aiperf = first_file("vllm"), first_file("aiperf")
    written, errors = import_files([vllm, aiperf], tmp_path / "runs", ImportOptions(id="x"))
    assert not written and [e.line() for e in errors] == [
        f"{aiperf}: AIPerf results, but {vllm} holds vllm bench serve results: one run is measured with one tool"]


def test_without_id_each_tool_and_model_makes_its_own_run(tmp_path: Path) -> None:
    aiperf = sorted((PEERS / "aiperf" / "sweep").rglob("profile_export_aiperf.json"))
    other = edited(tmp_path, aiperf[0], lambda d: d["input_config"]["models"]["items"][0].update(name="other-model"))
    written, errors = import_files([first_file("vllm"), *aiperf[1:], other], tmp_path / "runs", ImportOptions())
    assert not errors
    bundles = sorted((decode_bundle(p.read_bytes()) for p in written), key=lambda b: (b.origin, b.model))
    assert [(b.origin, b.model, len(b.decode)) for b in bundles] == [
        ("AIPerf import", "other-model", 1), ("AIPerf import", "sim-model", len(aiperf) - 1), ("vllm bench serve import", "sim-model", 1)]


def test_one_level_twice_is_refused_naming_both_files(tmp_path: Path) -> None:
    source = first_file("aiperf")
    copy = tmp_path / "copy.json"
    shutil.copy(source, copy)
    written, errors = import_files([source, copy], tmp_path / "runs", ImportOptions())
    data = read(source)
    key = f"{round(data['input_sequence_length']['avg'])} × {data['input_config']['phases'][0]['concurrency']}"
    assert not written and [e.line() for e in errors] == [f"{copy}:$: a second result for context {key} (the first: {source}:$)"]


def test_id_for_files_that_make_several_bundles_is_refused(tmp_path: Path) -> None:
    pages = [str(p) for p in sorted((FIXTURES / "seeds").glob("*.txt"))[:2]]
    result = CliRunner().invoke(main, ["import", "--id", "x", "--out", str(tmp_path / "runs"), *pages])
    assert result.exit_code == 1 and result.output.startswith("error: --id: names one bundle, but these files make 2")
    assert not (tmp_path / "runs").exists()


def test_a_folder_without_result_files_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["import", "--out", str(tmp_path / "runs"), str(tmp_path)])
    assert result.exit_code == 1
    assert result.output == f"error: {tmp_path}: no result files in this folder (looked for run=*.json, profile_export_aiperf.json)\n"


def test_tail_percentiles_are_left_out_of_cells_without_them(tmp_path: Path) -> None:
    path = edited(tmp_path, first_file("vllm"), lambda d: [d.pop(k) for k in ("p90_ttft_ms", "p90_itl_ms")])
    [cell] = import_one([path], tmp_path).decode
    assert cell.ttft_p90_ms is msgspec.UNSET and cell.tbt_p90_ms is msgspec.UNSET and cell.ttft_p99_ms is not msgspec.UNSET


def test_guidellm_benchmarks_at_a_request_rate_are_left_out_with_a_note(tmp_path: Path) -> None:
    source = sorted((PEERS / "guidellm" / "sweep").glob("*.json"))[0]
    path = edited(tmp_path, source, lambda d: d["benchmarks"][0]["config"]["strategy"].update(type_="constant", streams=None))
    bundle = import_one([path], tmp_path)
    assert len(bundle.decode) == len(read(source)["benchmarks"]) - 1
    assert "edited.json: 1 benchmark is driven by request rate (constant), not imported" in bundle.notes


def test_a_cancelled_aiperf_run_is_said_in_the_notes(tmp_path: Path) -> None:
    path = edited(tmp_path, first_file("aiperf"), lambda d: d.update(was_cancelled=True))
    assert "edited.json: the run was cancelled before it finished." in import_one([path], tmp_path).notes


def test_levels_whose_mean_input_lengths_differ_by_under_1_percent_share_a_row(tmp_path: Path) -> None:
    paths = sorted((PEERS / "vllm" / "held-back").glob("*.json"))
    means = {path: read(path)["total_input_tokens"] / read(path)["completed"] for path in paths}
    assert len({round(m) for m in means.values()}) > 2, "vLLM's random prompts wander by a token or two"
    bundle = import_one(paths, tmp_path)
    assert sorted({c.context_tokens for c in bundle.decode}) == [512, 2048]
    assert sorted(c.prompt_tokens for c in bundle.decode) == sorted(round(m) for m in means.values())
    assert "each cell's own mean is its prompt tokens" in bundle.notes
