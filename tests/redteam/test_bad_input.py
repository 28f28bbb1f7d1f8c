"""Bad pages and bundles: one clear line per problem naming file and line or field, no traceback,
non-zero exit, and the previous site left exactly as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from sitegen.cli import main
from tests.builders import ROOT, SEEDS, tree_digest
from tests.sample_site import MIMO, sample_document, write_content

SEED_TAB = SEEDS[0]


def _sitegen(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _content_with(tmp_path: Path, name: str, text: str) -> Path:
    content = write_content(tmp_path, pages=False)
    (content / "runs" / name).write_text(text)
    return content


def test_matrix_cell_that_disagrees_with_the_table_is_named(tmp_path: Path) -> None:
    page = tmp_path / "page.txt"
    page.write_text(SEED_TAB.read_text().replace("8K\t164.162 ms TTFT", "8K\t164.963 ms TTFT"))
    code, output = _sitegen("import", str(page), "--out", str(tmp_path / "runs"))
    assert code != 0
    assert output.strip().splitlines() == [
        f"error: {page}:line 64: matrix cell 8K × 1 shows '164.963msTTFT' but All measurements says '164.162msTTFT'"
    ]
    assert not (tmp_path / "runs").exists()


def test_prefill_item_that_disagrees_is_named(tmp_path: Path) -> None:
    page = tmp_path / "page.txt"
    page.write_text(SEED_TAB.read_text().replace("32K context27.7K", "32K context27.1K"))
    code, output = _sitegen("import", str(page), "--out", str(tmp_path / "runs"))
    assert code != 0
    assert "prefill item '32K context' shows '27.1K1,165msTTFT'" in output
    assert "Traceback" not in output


def test_unreadable_table_row_names_the_line(tmp_path: Path) -> None:
    page = tmp_path / "page.txt"
    page.write_text(SEED_TAB.read_text().replace("Sustained decode\t8K\t2\tValid\t284.6", "Sustained decode\t8K\t2\tValid\tfast"))
    code, output = _sitegen("import", str(page), "--out", str(tmp_path / "runs"))
    assert code != 0
    assert output.startswith(f"error: {page}:line 88: All measurements:")
    assert len(output.strip().splitlines()) == 1


def test_text_that_is_not_a_page_fails_with_one_line(tmp_path: Path) -> None:
    page = tmp_path / "notes.txt"
    page.write_text("hello\nworld\n")
    code, output = _sitegen("import", str(page))
    assert code != 0
    assert output == f"error: {page}:line 1: not a speed test matrix page: no 'Speed test matrix' line\n"


def test_good_pages_are_written_even_when_one_is_bad(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("Speed test matrix\n")
    code, output = _sitegen("import", str(SEEDS[1]), str(bad), "--out", str(tmp_path / "runs"))
    assert code != 0
    assert len(list((tmp_path / "runs").glob("*.json"))) == 1
    assert "bad.txt" in output


@pytest.mark.parametrize(("mutation", "field"), [
    (lambda b: b["decode"][0].update(total_tok_s="fast"), "$.decode[0].total_tok_s"),
    (lambda b: b["decode"][3].update(status="Quick"), "$.decode[3].status"),
    (lambda b: b.pop("engine"), "$"),
    (lambda b: b.update(id="../../etc"), "$.id"),
    (lambda b: b.update(id="C:\\\\runs"), "$.id"),
    (lambda b: b.update(id="run\u2215x"), "$.id"),
    (lambda b: b["hardware"].update(gpu_count=-1), "$.hardware.gpu_count"),
])
def test_bad_bundle_fails_the_build_and_keeps_the_old_site(tmp_path: Path, mutation, field: str) -> None:
    content, out = write_content(tmp_path, pages=False), tmp_path / "site"
    assert _sitegen("build", "--content", str(content), "--out", str(out))[0] == 0
    before = tree_digest(out)
    bundle = sample_document(MIMO)
    bundle["id"] = "broken"
    mutation(bundle)
    (content / "runs" / "broken.json").write_text(json.dumps(bundle))
    code, output = _sitegen("build", "--content", str(content), "--out", str(out))
    assert code != 0
    assert output.startswith(f"error: {content / 'runs' / 'broken.json'}:{field}: ")
    assert len(output.strip().splitlines()) == 1
    assert tree_digest(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [".site.sitegen"]


def test_every_bad_bundle_is_listed(tmp_path: Path) -> None:
    content = _content_with(tmp_path, "a.json", "{not json")
    (content / "runs" / "b.json").write_text('{"id": "b", "model": "m"}')
    code, output = _sitegen("build", "--content", str(content), "--out", str(tmp_path / "site"))
    assert code != 0
    lines = output.strip().splitlines()
    assert len(lines) == 2 and "a.json" in lines[0] and "invalid JSON" in lines[0]
    assert "b.json:$: Object missing required field `engine`" in lines[1]
    assert not (tmp_path / "site").exists()


def test_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    content = _content_with(tmp_path, "copy.json", json.dumps(sample_document(MIMO)))
    code, output = _sitegen("build", "--content", str(content), "--out", str(tmp_path / "site"))
    assert code != 0
    assert output == (
        f"error: {content / 'runs' / f'{MIMO}.json'}:$.id: id '{MIMO}' is already used by "
        f"{content / 'runs' / 'copy.json'}\n"
    )


def test_build_refuses_to_replace_a_folder_it_did_not_build(tmp_path: Path) -> None:
    victim = tmp_path / "notes"
    victim.mkdir()
    (victim / "thesis.txt").write_text("precious")
    code, output = _sitegen("build", "--content", str(write_content(tmp_path)), "--out", str(victim))
    assert code != 0 and "refusing to replace a folder that sitegen did not build" in output
    assert (victim / "thesis.txt").read_text() == "precious"


@pytest.mark.parametrize("where", ["content", "content/runs", "."])
def test_build_refuses_an_output_folder_that_overlaps_the_content(tmp_path: Path, where: str) -> None:
    content = _content_with(tmp_path, "extra.json", json.dumps(sample_document(MIMO) | {"id": "extra"}))
    before = tree_digest(tmp_path)
    code, output = _sitegen("build", "--content", str(content), "--out", str(tmp_path / where))
    assert code != 0 and "overlaps the input folder" in output
    assert tree_digest(tmp_path) == before


def test_a_manifest_cannot_make_a_build_delete_outside_its_folder(tmp_path: Path) -> None:
    content, out = write_content(tmp_path), tmp_path / "site"
    assert _sitegen("build", "--content", str(content), "--out", str(out))[0] == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    manifest = tmp_path / ".site.sitegen" / "state" / "manifest"
    version, outputs = msgspec.msgpack.decode(manifest.read_bytes())
    outputs.update({"../victim/": ["x", ["../victim/keep.txt"]], str(victim) + "/": ["x", [str(victim / "keep.txt")]],
                    "runs/../../victim/keep.txt": ["x", ["runs/../../victim/keep.txt"]]})
    manifest.write_bytes(msgspec.msgpack.encode([version, outputs]))
    assert _sitegen("build", "--content", str(content), "--out", str(out))[0] == 0
    assert (victim / "keep.txt").read_text() == "keep"
    assert not [p for p in out.rglob("keep.txt")]  # nor copy anything from outside into the site


def test_a_valid_cell_without_its_value_is_an_error(tmp_path: Path) -> None:
    bundle = sample_document(MIMO)
    bundle["decode"][0]["total_tok_s"] = None
    content = _content_with(tmp_path, f"{MIMO}.json", json.dumps(bundle))
    code, output = _sitegen("build", "--content", str(content), "--out", str(tmp_path / "site"))
    assert code != 0
    assert output.strip().endswith("$.decode[0].total_tok_s: a Valid cell needs its total tok/s")


def test_import_options_override_what_the_page_says(tmp_path: Path) -> None:
    code, output = _sitegen("import", str(SEED_TAB), "--out", str(tmp_path), "--gpu", "B200", "--gpu-count", "4", "--id", "on-b200")
    assert code == 0, output
    bundle = json.loads((tmp_path / "on-b200.json").read_text())
    assert (bundle["hardware"]["gpu"], bundle["hardware"]["gpu_count"], bundle["model"]) == ("B200", 4, "Ling-3.0-flash-fp4")


def test_import_never_overwrites_a_bundle_unless_asked(tmp_path: Path) -> None:
    assert _sitegen("import", str(SEED_TAB), "--out", str(tmp_path))[0] == 0
    written = next(tmp_path.glob("*.json"))
    written.write_text(written.read_text().replace('"Discrete GPU"', '"Edited by hand"'))
    code, output = _sitegen("import", str(SEED_TAB), "--out", str(tmp_path))
    assert code != 0 and "exists already; pass --replace" in output
    assert "Edited by hand" in written.read_text()
    assert _sitegen("import", str(SEED_TAB), "--out", str(tmp_path), "--replace")[0] == 0
    assert "Edited by hand" not in written.read_text()
    assert written.stat().st_mode & 0o777 == 0o644


NO_RUNS = "no such folder (--content should be the folder holding runs/ and pages/)"


@pytest.mark.parametrize("content", ["contnet", "content/runs", "README.md"])
def test_a_content_folder_without_runs_fails_and_keeps_the_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str) -> None:
    write_content(tmp_path)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    monkeypatch.chdir(tmp_path)
    assert _sitegen("build", "--content", "content", "--out", "site")[0] == 0
    before = tree_digest(tmp_path / "site")
    code, output = _sitegen("build", "--content", content, "--out", "site")
    assert code != 0
    assert output == f"error: {content}/runs: {NO_RUNS}\n"
    assert tree_digest(tmp_path / "site") == before


def test_an_empty_runs_folder_builds_a_first_site(tmp_path: Path) -> None:
    (tmp_path / "content" / "runs").mkdir(parents=True)
    code, output = _sitegen("build", "--content", str(tmp_path / "content"), "--out", str(tmp_path / "site"))
    assert code == 0, output
    assert output.startswith(f"built 0 runs and 0 comparisons into {tmp_path / 'site'}/ ")
    assert (tmp_path / "site" / "index.html").is_file()


def _broken_json_lines(tmp_path: Path, text: str) -> tuple[str, str]:
    """The error line of `sitegen build` and of `sitegen import` for one broken bundle, each without its path."""
    content = tmp_path / "content"
    (content / "runs").mkdir(parents=True)
    path = content / "runs" / "broken.json"
    path.write_text(text)
    lines = []
    for args in (["build", "--content", str(content), "--out", str(tmp_path / "site")], ["import", str(path), "--out", str(tmp_path / "runs")]):
        code, output = _sitegen(*args)
        assert code != 0 and output.startswith(f"error: {path}:") and output.count("\n") == 1, output
        lines.append(output.removeprefix(f"error: {path}:").rstrip("\n"))
    assert not (tmp_path / "site").exists() and not (tmp_path / "runs").exists()
    return lines[0], lines[1]


def test_a_truncated_bundle_reads_the_same_from_build_and_import(tmp_path: Path) -> None:
    text = json.dumps(sample_document(MIMO), indent=2)
    cut = text[: text.index('"status"', len(text) // 2) + 4]
    last = cut.splitlines()
    assert _broken_json_lines(tmp_path, cut) == (f"{len(last)}:{len(last[-1]) + 1}: invalid JSON: unexpected end of file",) * 2


def test_a_stray_character_mid_file_is_placed_by_line_and_column(tmp_path: Path) -> None:
    lines = json.dumps(sample_document(MIMO), indent=2).splitlines()
    assert lines[4].startswith('  "')
    lines[4] = "  x" + lines[4][2:]
    assert _broken_json_lines(tmp_path, "\n".join(lines)) == ("5:3: invalid JSON: object keys must be strings",) * 2
