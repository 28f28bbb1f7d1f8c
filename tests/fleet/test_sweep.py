"""`runner sweep FILE`: many setups, each server started and stopped, resumable, one failure not the end."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from runner.bundle.schema import decode_bundle
from runner.cli import main
from runner.journal import journal_path
from tests.engines.llama_server import llama_server_binary, make_tiny_gguf
from tests.fleet.fleet_builders import BROKEN, SIMULATOR, RunnerProcess, listening, no_new_servers, port_of, sweep_file


def sweep(file: Path, *extra: str) -> Result:
    """`runner sweep FILE` in-process."""
    return CliRunner().invoke(main, ["sweep", str(file), *extra])


@pytest.fixture(autouse=True)
def no_server_left() -> Iterator[None]:
    """No launched server outlives a test."""
    with no_new_servers():
        yield


@pytest.mark.parametrize(("text", "phrase"), [
    ('[[setup]]\nid = "a"\nserve = "x"\nconext = "8K"\n', "setup 'a': conext: unknown key (did you mean contexts?)"),
    ('[defaults]\nconcurrency = "1,x"\n[[setup]]\nid = "a"\nserve = "x"\n', "setup 'a': concurrency: not a whole number: 'x'"),
    ('[[setup]]\nid = "a"\nserve = "x"\nduration = "nan"\n', "setup 'a': duration: 'nan' is not a finite number"),
    ('[[setup]]\nid = "a"\nserve = "x"\n[[setup]]\nid = "a"\nserve = "y"\n', "setup 'a': id: 'a' is used by an earlier setup"),
    ('[[setup]]\nid = "a"\n', "setup 'a': serve: required"),
    ('[[setup]]\nserve = "x"\n', "setup 1: id: required"),
    ('[[setup]]\nid = "Bad Id"\nserve = "x"\n', "setup 'Bad Id': --id: 'Bad Id' is not a run id"),
    ('[[setup]]\nid = "a"\nserve = "x"\ngpus = -1\n', "setup 'a': gpus: expected a whole number"),
    ('[[setup]]\nid = "a"\nserve = "x"\nenv = { A = 1 }\n', "setup 'a': env: expected a table of strings"),
    ('[[setup]]\nid = "a"\nserve = "x"\nout = "elsewhere.json"\n', "setup 'a': out: not set in a sweep file"),
    ('[defaults]\nid = "a"\n[[setup]]\nid = "b"\nserve = "x"\n', "[defaults]: id: each setup has its own id"),
    ('[[setup]\nid = "a"\n', "invalid TOML"),
    ('[setups]\n', "setups: unknown table"),
])
def test_a_mistake_in_the_sweep_file_stops_it_before_anything_starts(tmp_path: Path, text: str, phrase: str) -> None:
    file = tmp_path / "sweep.toml"
    file.write_text(text)
    result = sweep(file, "--out-dir", str(tmp_path / "runs"))
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [result.output.splitlines()[-1]] and phrase in result.output, result.output
    assert result.output.startswith(f"error: {file}: ") or "invalid TOML" in result.output
    assert not (tmp_path / "runs").exists()


def test_dry_run_prints_each_setup_its_gpus_matrix_and_estimate(tmp_path: Path) -> None:
    file = sweep_file(tmp_path / "sweep.toml", [
        {"id": "tp2", "serve": "vllm serve m --port {port} --tensor-parallel-size 2", "concurrency": "1,4"},
        {"id": "explicit", "serve": "vllm serve m -tp 2 -dp 2", "gpus": 8},
        {"id": "derived", "serve": "vllm serve m -tp 2 -dp 2"},
    ])
    result = sweep(file, "--dry-run", "--out-dir", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    text = result.output
    assert "tp2 · 2 GPUs · new" in text and "explicit · 8 GPUs · new" in text and "derived · 4 GPUs · new" in text
    assert "concurrency: 1, 4 · 0.5 s each" in text and "contexts:    1K" in text
    assert "3 setups, up to 8 GPUs each" in text
    assert not (tmp_path / "runs").exists()


def _llama(model: Path, slots: int) -> str:
    return (f"{llama_server_binary()} -m {model} --host 127.0.0.1 --port {{port}} -np {slots} -c {2048 * slots} "
            "--metrics --slots -t 1 --no-warmup")


@pytest.mark.llama
def test_two_setups_that_work_and_one_that_cannot_start(tmp_path: Path) -> None:
    """The judged sweep: real llama.cpp at two slot counts, and a server that cannot start."""
    model = make_tiny_gguf(tmp_path / "tiny.gguf")
    file = sweep_file(tmp_path / "sweep.toml", [
        {"id": "llama-2-slots", "serve": _llama(model, 2)},
        {"id": "broken", "serve": BROKEN, "ready_timeout": 120},
        {"id": "llama-4-slots", "serve": _llama(model, 4), "concurrency": "1,4"},
    ])
    runs = tmp_path / "runs"
    first = sweep(file, "--out-dir", str(runs))
    assert first.exit_code == 1, first.output
    summary = first.output[first.output.index(f"sweep {file}:"):].splitlines()
    assert summary[1].split()[:2] == ["llama-2-slots", "done"]
    assert summary[2].split()[:2] == ["broken", "failed"] and "exited with status 4 before it became ready" in summary[2]
    assert any("fatal: no such model: missing/model" in line for line in summary)
    assert summary[-1] == "2 done, 1 failed, 0 skipped"
    ports = []
    for run_id, slots in (("llama-2-slots", 2), ("llama-4-slots", 4)):
        bundle = decode_bundle((runs / f"{run_id}.json").read_bytes())
        assert bundle.id == run_id and bundle.engine.name == "llama.cpp"
        assert f"-np {slots} " in (bundle.launch_command or "") and "{port}" not in (bundle.launch_command or "")
        assert bundle.launch.log == f"{run_id}.server.log" and bundle.launch.ended == "stopped by the runner (SIGTERM)"
        assert "llama" in (runs / f"{run_id}.server.log").read_text()
        # Measured, each cell: on two busy cores the server's evidence may mark one queued or distorted.
        assert len(bundle.decode) == 2 and all(cell.status != "Failed" and cell.total_tok_s for cell in bundle.decode)
        ports.append(port_of(bundle.launch_command or ""))
    assert not (runs / "broken.json").exists() and "no such model" in (runs / "broken.server.log").read_text()
    stamps = {path.name: path.stat().st_mtime_ns for path in runs.glob("llama-*.json")}
    again = sweep(file, "--out-dir", str(runs))
    assert again.exit_code == 1, again.output
    assert again.output.splitlines()[-1] == "0 done, 1 failed, 2 skipped"
    assert {path.name: path.stat().st_mtime_ns for path in runs.glob("llama-*.json")} == stamps
    assert not any(listening(port) for port in ports)


def test_a_half_finished_setup_resumes_and_a_finished_one_is_skipped(tmp_path: Path) -> None:
    file = sweep_file(tmp_path / "sweep.toml", [{"id": "sim-a", "serve": SIMULATOR}, {"id": "sim-b", "serve": SIMULATOR}])
    runs = tmp_path / "runs"
    assert sweep(file, "--out-dir", str(runs)).exit_code == 0
    journal = journal_path(runs / "sim-b.json")
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]))  # sim-b's last cell is not measured yet
    result = sweep(file, "--out-dir", str(runs))
    assert result.exit_code == 0, result.output
    assert "== setup 2 of 2: sim-b" in result.output and "(resuming)" in result.output
    started = [line.split("]")[0] + "]" for line in result.output.splitlines() if line.startswith("[")]
    assert started == ["[2/3]"], result.output  # only the missing cell
    assert result.output.splitlines()[-1] == "1 done, 0 failed, 1 skipped"
    assert len(decode_bundle((runs / "sim-b.json").read_bytes()).decode) == 2


def test_ctrl_c_stops_the_server_and_prints_the_command_that_resumes(tmp_path: Path) -> None:
    file = sweep_file(tmp_path / "sweep.toml", [{"id": "long", "serve": SIMULATOR, "concurrency": "1,2,3,4,5,6",
                                                  "duration": 2}])
    process = RunnerProcess(["sweep", str(file), "--out-dir", "runs"], tmp_path)
    process.wait_for_first_point()
    port = port_of(json.loads((tmp_path / "runs" / "long.json").read_text())["launch_command"])
    assert process.interrupt(signal.SIGINT) == 130, "\n".join(process.lines)
    assert process.lines[-1] == f"error: interrupted; the running server is stopped and finished cells are kept; " \
                                f"resume the sweep with: python3 -m runner sweep {file} --out-dir runs"
    assert not listening(port)


def test_the_readme_sweep_file_is_one_runner_sweep_takes(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme[readme.index("## Measuring many setups"):]
    file = tmp_path / "sweep.toml"
    file.write_text(section.split("```toml\n", 1)[1].split("```", 1)[0])
    result = sweep(file, "--dry-run", "--out-dir", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    assert "ling-3-0-flash-fp4-h200-nvl-x2 · 2 GPUs · new" in result.output
    assert "qwen3-8b-h200-nvl-x1 · 1 GPU · new" in result.output
