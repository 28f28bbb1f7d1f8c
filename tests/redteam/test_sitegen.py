"""Red-team cases against `sitegen`: colliding names, FIFOs, hidden files, huge numbers, unwritable folders, serve."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from runner.bundle.schema import Bundle, Engine
from sitegen.build import build_site
from sitegen.figures.compare import compare_slug
from sitegen.pages.exports import csv_cell
from sitegen.serve.command import Server
from sitegen.slug import slugify
from tests.builders import ROOT, SEEDS
from tests.sample_site import MIMO, sample_document, write_content


def _bundle(**changes: object) -> dict:
    document = sample_document(MIMO)
    for path, value in changes.items():
        target = document
        *parents, leaf = path.split("__")
        for parent in parents:
            target = target[parent]
        target[leaf] = value
    return document


def _content(tmp_path: Path, *documents: dict) -> Path:
    runs = tmp_path / "content" / "runs"
    runs.mkdir(parents=True)
    for document in documents:
        (runs / f"{document['id']}.json").write_text(json.dumps(document))
    return tmp_path / "content"


def _sitegen(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m sitegen ARGS` in a process of its own, so a hang shows as a timeout, not a stuck suite."""
    return subprocess.run([sys.executable, "-m", "sitegen", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _one_error(result: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


def test_non_latin_model_names_get_distinct_readable_pages(tmp_path: Path) -> None:
    content = _content(tmp_path, _bundle(id="qwen-cn", model="通义千问"), _bundle(id="model-ru", model="Модель Б"))
    build_site(content, tmp_path / "site")
    # Transliterated, so readable; and a hash of the name, as "Model B" transliterates alike.
    assert slugify("通义千问").startswith("tong-yi-qian-wen--") and slugify("Модель Б").startswith("model-b--")
    assert (tmp_path / "site" / "models" / slugify("通义千问") / "index.html").is_file()
    assert (tmp_path / "site" / "models" / slugify("Модель Б") / "index.html").is_file()
    index = (tmp_path / "site" / "index.html").read_text()
    assert "2 runs of 2 models" in index
    compare = next((tmp_path / "site" / "compare").glob("*-vs-*.html")).read_text()
    assert "Same model on other hardware" not in compare


def test_names_with_nothing_to_transliterate_stay_apart() -> None:
    assert slugify("🚀") != slugify("🛸") and slugify("🚀").startswith("x-")
    assert slugify(" ") != slugify("run")  # a blank name takes no real name's page


@pytest.mark.parametrize(("first", "second"), [
    (("a-vs-b", "c"), ("a", "b-vs-c")),
    (("a-vs", "b"), ("a", "vs-b")),
    (("x-vs-y-vs-z", "w"), ("x", "y-vs-z-vs-w")),
])
def test_comparison_slugs_cannot_collide(first: tuple[str, str], second: tuple[str, str]) -> None:
    def run(run_id: str) -> Bundle:
        return Bundle(id=run_id, model="m", engine=Engine(name="e"))

    assert compare_slug(run(first[0]), run(first[1])) != compare_slug(run(second[0]), run(second[1]))
    assert compare_slug(run("mimo"), run("ling")) == "mimo-vs-ling"  # the common case keeps its address


def test_a_fifo_among_the_bundles_is_refused_without_reading_it(tmp_path: Path) -> None:
    content = _content(tmp_path, _bundle())
    os.mkfifo(content / "runs" / "x.json")
    _one_error(_sitegen("build", "--content", str(content), "--out", str(tmp_path / "site"), timeout=30),
               "x.json: cannot read: not a regular file")


def test_a_fifo_given_to_import_is_refused_without_reading_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.json")
    _one_error(_sitegen("import", str(tmp_path / "x.json"), "--out", str(tmp_path / "runs"), timeout=30),
               "x.json: cannot read: not a regular file")


def test_a_fifo_among_the_pages_is_refused_without_reading_it(tmp_path: Path) -> None:
    content = _content(tmp_path, _bundle())
    (content / "pages").mkdir()
    os.mkfifo(content / "pages" / "30-x.md")
    _one_error(_sitegen("build", "--content", str(content), "--out", str(tmp_path / "site"), timeout=30),
               "30-x.md: cannot read: not a regular file")


def test_hidden_files_are_not_read_as_bundles_or_pages(tmp_path: Path) -> None:
    content = _content(tmp_path, _bundle())
    for name in (".#x.json", "._x.json", ".hidden.json"):
        (content / "runs" / name).write_bytes(b"\x00\x05junk")
    (content / "pages").mkdir()
    (content / "pages" / "._10-about.md").write_bytes(b"\x00\x05junk")
    assert "built 1 run" in build_site(content, tmp_path / "site")


@pytest.mark.parametrize(("changes", "field"), [
    ({"hardware__vram_per_gpu_gb": 1e308, "hardware__gpu_count": 2}, "$.hardware.vram_per_gpu_gb"),
    ({"measured_at": "0001-01-01T00:00:00+05:00"}, "$.measured_at"),
    ({"measured_at": "9999-12-31T23:59:00-05:00"}, "$.measured_at"),
])
def test_numbers_and_dates_no_page_can_print_are_one_line(tmp_path: Path, changes: dict, field: str) -> None:
    content = _content(tmp_path, _bundle(**changes))
    _one_error(_sitegen("build", "--content", str(content), "--out", str(tmp_path / "site")), field)


@pytest.mark.parametrize("where", ["below-a-file", "proc"])
def test_an_out_that_cannot_be_written_is_one_line(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "site" if where == "below-a-file" else Path("/proc/speed-matrix-site")
    _one_error(_sitegen("build", "--content", str(write_content(tmp_path)), "--out", str(out)), "cannot write the site")
    _one_error(_sitegen("import", str(SEEDS[0]), "--out", str(out)), "cannot write")


def test_import_out_that_is_a_file_or_a_symlink_loop_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    for out in (tmp_path / "file", tmp_path / "loop"):
        _one_error(_sitegen("import", str(SEEDS[0]), "--out", str(out)), str(out), "cannot write")
    _one_error(_sitegen("build", "--content", str(write_content(tmp_path)), "--out", str(tmp_path / "loop")), str(tmp_path / "loop"))


def test_a_missing_templates_folder_is_one_line(tmp_path: Path) -> None:
    _one_error(_sitegen("build", "--content", str(write_content(tmp_path)), "--out", str(tmp_path / "site"),
                        "--templates", str(tmp_path / "nope")), "not a templates folder")


@pytest.mark.parametrize("text", [" =1+1", "\n=1+1", "\r=1+1", "\t=1+1", "\x00=1+1", "=1+1", "@SUM(A1)"])
def test_csv_cells_that_could_hide_a_formula_are_defused(text: str) -> None:
    assert csv_cell(text) == "'" + text


def test_serve_answers_a_nul_in_the_path_with_400_and_keeps_serving(tmp_path: Path) -> None:
    content = _content(tmp_path, _bundle())
    server = Server(content, tmp_path / "site", port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert httpx.get(server.url + "%00").status_code == 400
        assert httpx.get(server.url + "runs/%00/index.html").status_code == 400
        assert httpx.get(server.url).status_code == 200
    finally:
        server.stop()
        thread.join(10)


def test_serve_with_out_inside_content_builds_once(tmp_path: Path) -> None:
    content = _content(tmp_path, _bundle())
    out = content / "site"
    server = Server(content, out, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    first = out.stat().st_ino
    thread.start()
    try:
        time.sleep(2.5)  # five polls
        assert out.stat().st_ino == first  # every build swaps a new folder in; none happened
        (content / "runs" / f"{MIMO}.json").write_text(json.dumps(_bundle(model="Renamed")))
        deadline = time.monotonic() + 30
        while out.stat().st_ino == first and time.monotonic() < deadline:
            time.sleep(0.1)
        assert out.stat().st_ino != first  # a real change still rebuilds
    finally:
        server.stop()
        thread.join(10)
    shutil.rmtree(out)
