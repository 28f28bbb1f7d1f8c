"""Which files a folder gives: every JSON in a runs folder, elsewhere only JSON that reads as a bundle."""

from __future__ import annotations

from pathlib import Path

from runner.bundle.schema import encode_bundle
from sitegen.check.discovery import bundle_files
from sitegen.importers.options import ImportOptions
from sitegen.importers.registry import import_file
from tests.builders import SEEDS, sitegen_check

SEED = encode_bundle(import_file(SEEDS[-1], ImportOptions()))  # a consistent bundle: a seed page imported


def test_a_repository_folder_gives_its_bundles_and_passes_over_other_json(tmp_path: Path) -> None:
    (tmp_path / "content" / "runs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / ".git").mkdir()
    in_runs = tmp_path / "content" / "runs" / "a.json"
    in_runs.write_bytes(SEED)
    broken = tmp_path / "content" / "runs" / "b.json"
    broken.write_text("{")
    outside = tmp_path / "elsewhere" / "c.json"
    outside.write_bytes(SEED)
    (tmp_path / "package.json").write_text('{"name": "x"}')
    (tmp_path / "elsewhere" / "list.json").write_text("[1]")
    (tmp_path / ".git" / "hidden.json").write_bytes(SEED)
    (tmp_path / "content" / "runs" / ".draft.json").write_text("{")
    found = bundle_files([tmp_path, in_runs])
    assert (found.files, found.passed_over, found.problems) == ([in_runs, broken, outside], 2, [])


def test_the_folder_check_says_what_it_passed_over(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.json").write_bytes(SEED)
    (tmp_path / "notes.json").write_text('{"id": 1}')
    checked = sitegen_check(tmp_path)
    assert (checked.exit_code, checked.errors) == (0, [])
    assert checked.verdicts[-1] == "1 bundle checked: 1 consistent; 1 other JSON file passed over"
