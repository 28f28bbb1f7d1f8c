"""Run ids that look like paths are refused everywhere, and nothing is written outside the output folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import main
from sitegen.content.loader import decode_bundle_file
from sitegen.errors import InputError
from sitegen.publish.swap import Stage
from tests.builders import FIXTURES, SEEDS
from tests.sample_site import MIMO, sample_document, write_content

PATH_IDS = [
    "../x", "/abs", "a\\b", "..", ".", "a/b", "\uff52\uff55\uff4e", "run\u2215x", "run\u2024x", "", "a" * 200,
    "Run-1", "run-", "-run", "run x", "run\x00x", "run\nx", "~", "C:\\runs",
]
IMPORT_SOURCES = [SEEDS[0], SEEDS[-1], FIXTURES / "llm-inference-bench-0.4.18.json"]


def _files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("run_id", PATH_IDS)
def test_path_like_ids_are_rejected_at_id(run_id: str) -> None:
    bundle = sample_document(MIMO)
    bundle["id"] = run_id
    with pytest.raises(InputError) as caught:
        decode_bundle_file(Path("runs/x.json"), json.dumps(bundle).encode())
    assert caught.value.line().startswith("runs/x.json:$.id: ")
    assert "\n" not in caught.value.line()


@pytest.mark.parametrize("source", IMPORT_SOURCES, ids=lambda p: p.name)
@pytest.mark.parametrize("run_id", ["../evil", "/tmp/evil", "a/../../evil", "\uff45\uff56\uff49\uff4c"])
def test_import_refuses_an_id_that_is_a_path(tmp_path: Path, source: Path, run_id: str) -> None:
    out = tmp_path / "box" / "runs"
    result = CliRunner().invoke(main, ["import", str(source), "--id", run_id, "--out", str(out)])
    assert result.exit_code != 0
    assert result.output.splitlines() == [result.output.strip()]
    assert result.output.startswith("error: --id: ")
    assert _files_under(tmp_path) == set()


def test_build_writes_only_inside_its_output_folder(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    before = _files_under(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["build", "--content", str(content), "--out", str(out)])
    assert result.exit_code == 0, result.output
    work = tmp_path / ".out.sitegen"  # the build's own files, beside the site
    assert {p for p in _files_under(tmp_path) - before if out not in p.parents and work not in p.parents} == set()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.sitegen", "content", "out"]


@pytest.mark.parametrize("relative", ["../x", "../../etc/passwd", "/etc/passwd", "a/../../x", "runs/../../x"])
def test_stage_refuses_paths_that_leave_it(tmp_path: Path, relative: str) -> None:
    stage = Stage(tmp_path / "stage")
    with pytest.raises(InputError, match="outside the output folder"):
        stage.path(relative)
    with pytest.raises(InputError):
        stage.write(relative, "x")
    assert _files_under(tmp_path) == set()


def test_stage_refuses_a_symlink_that_leaves_it(tmp_path: Path) -> None:
    (tmp_path / "stage").mkdir()
    (tmp_path / "stage" / "link").symlink_to(tmp_path)
    with pytest.raises(InputError):
        Stage(tmp_path / "stage").write("link/x", "x")
    assert not (tmp_path / "x").exists()
