"""The schema: a bundle decodes strictly, and any input at all gives error lines, never a traceback."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.bundle.records import records_path
from runner.bundle.schema import decode_bundle
from sitegen.check import decoding
from sitegen.check.checker import CheckContext, check_data, check_file
from tests.builders import ROOT, check_errors_at, edit_json


@pytest.mark.parametrize(("text", "where", "message"), [
    (b'{"id": "x",', "1:12", "invalid JSON: unexpected end of file"),
    (b"", "1:1", "invalid JSON: unexpected end of file"),
    (b"\xff\xfe\x00garbage", "1:1", "invalid JSON: invalid character"),
    (b"[1, 2]", "$", "expected an object"),
    (b"[" * 100_000 + b"]" * 100_000, None, "invalid JSON: nested too deeply"),
])
def test_broken_files_are_one_line(tmp_path: Path, text: bytes, where: str | None, message: str) -> None:
    path = tmp_path / "runs" / "broken.json"
    path.parent.mkdir()
    path.write_bytes(text)
    [line] = check_errors_at(path, where)
    assert line.startswith(f"error: {path}:{where}: {message}" if where else f"error: {path}: {message}")


def test_a_figure_of_the_wrong_type_and_a_negative_one(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][2].update(total_tok_s="fast"))
    assert check_errors_at(seed_run, "$.decode[2].total_tok_s") == [
        f"error: {seed_run}:$.decode[2].total_tok_s: expected a number or null"]
    edit_json(seed_run, lambda d: d["decode"][2].update(total_tok_s=-1.0))
    assert check_errors_at(seed_run, "$.decode[2].total_tok_s")


def test_a_misspelt_field_is_unknown(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][4].update(totl_tok_s=1.0))
    assert check_errors_at(seed_run, "$.decode[4].totl_tok_s") == [
        f"error: {seed_run}:$.decode[4].totl_tok_s: unknown field: the schema has no such field"]


def _objects(node: object, trail: tuple = ()) -> list[tuple]:
    """The trail of keys and indexes to every JSON object in a document."""
    found = [trail] if isinstance(node, dict) else []
    for key, value in node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ():
        found += _objects(value, (*trail, key))
    return found


def test_a_build_finds_an_unknown_key_in_any_object_as_a_full_decode_does(repeated_run: Path, tmp_path: Path) -> None:
    """The build's checker asks the schema's strict twin first; a key it does not know, in any object
    at any depth (a repeat of a cell included), is found and named as the walk over plain JSON names it."""
    document = json.loads(repeated_run.read_bytes())
    trails = _objects(document)
    assert any("repeats" in trail for trail in trails) and len(trails) > 10
    plain = repeated_run.read_bytes()
    assert decoding.known_only(plain) and decode_bundle(plain)
    for trail in trails:
        edited = json.loads(plain)
        target = functools.reduce(lambda node, key: node[key], trail, edited)
        target["extra_figure"] = 1.0
        data = json.dumps(edited).encode()
        read = decode_bundle(data)  # the build's own lenient decode ignores the key
        assert not decoding.known_only(data), trail
        in_build = check_data(tmp_path / "run.json", data, CheckContext(), read, beside=False)
        alone = check_data(tmp_path / "run.json", data, CheckContext(), beside=False)
        where = "$" + "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in trail) + ".extra_figure"
        assert [p.where for p in in_build.problems if "unknown field" in p.message] == [where], trail
        assert in_build.problems == alone.problems


def test_a_measurement_date_in_the_future(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d.update(measured_at="2999-01-01T00:00:00Z"))
    assert check_errors_at(seed_run, "$.measured_at")


def test_a_missing_file_a_fifo_and_a_huge_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_run: Path) -> None:
    missing = tmp_path / "missing.json"
    assert check_errors_at(missing, None) == [f"error: {missing}: cannot read: no such file"]
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert check_errors_at(fifo, None) == [f"error: {fifo}: cannot read: not a regular file"]
    monkeypatch.setattr(decoding, "MAX_BUNDLE_BYTES", 1000)
    [line] = check_errors_at(seed_run, None)
    assert "too large to be a bundle" in line


def test_nothing_but_error_lines_from_the_program(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"schema": 1, "id": "Bad Id", "model": "m", "engine": {"name": "e"}, "decode": [{}]}')
    done = subprocess.run([sys.executable, "-m", "sitegen", "check", str(bad)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: {bad}:$.id: expected a string matching regex '^[a-z0-9](?:[a-z0-9-]{{0,118}}[a-z0-9])?$'"]
    assert done.stdout.splitlines() == [
        f"{bad}: inconsistent (1 problem; unsigned; no raw records)", "1 bundle checked: 1 inconsistent"]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=8)
FIELDS = ["total_tok_s", "per_request_tok_s", "avg_active", "output_tokens", "completed", "concurrency", "measured_s",
          "status", "repeats", "tbt_ms", "ttft_p90_ms", "prompt_tokens"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=JSON)
def test_any_value_in_any_figure_gives_lines_not_a_traceback(measured_run: Path, tmp_path: Path, field: str,
                                                             value: object) -> None:
    path = tmp_path / "runs" / "measured.json"
    path.parent.mkdir(exist_ok=True)
    shutil.copy(measured_run, path)
    shutil.copy(records_path(measured_run), records_path(path))
    edit_json(path, lambda d: d["decode"][0].update({field: value}))
    verdict = check_file(path, CheckContext())
    assert verdict.kind in ("consistent", "inconsistent") and all(p.line() for p in verdict.problems)
