"""The contract package (runner/bundle/): the only thing runner and sitegen share, and each shared fact said once."""

from __future__ import annotations

import ast
import datetime as dt
import os
import stat
from pathlib import Path

import pytest

from runner.bundle.files import Unreadable, read_input, write_atomic, write_bundle
from runner.bundle.ids import RUN_ID_MAX, is_run_id, run_id
from runner.bundle.launch_words import launch_words
from runner.bundle.schema import Bundle, Engine, decode_bundle
from runner.errors import OptionError
from runner.metadata import build_header
from runner.options import Options
from runner.plan import PlanSpec, estimate_seconds, measuring_order
from runner.server_facts import ServerFacts
from runner.simulate import load_sim_config
from sitegen.content.loader import load_bundle
from sitegen.errors import InputError
from sitegen.importers.importer import slug_id
from tests.builders import ROOT


def _imports(package: Path) -> dict[str, set[str]]:
    """Every module each file under `package` imports, by file."""
    found: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def test_sitegen_imports_of_the_runner_only_the_contract_and_the_contract_nothing_else_of_it() -> None:
    crossing = {f: sorted(n for n in names if n.startswith("runner") and not n.startswith("runner.bundle")
                          and n != "runner")
                for f, names in _imports(ROOT / "sitegen").items()}
    assert {f: n for f, n in crossing.items() if n} == {}
    inward = {f: sorted(n for n in names if n.startswith("runner") and not n.startswith("runner.bundle"))
              for f, names in _imports(ROOT / "runner" / "bundle").items()}
    assert {f: n for f, n in inward.items() if n} == {}
    assert not any(n.startswith("sitegen") for names in _imports(ROOT / "runner").values() for n in names)


@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "通义千问/" + "Долгое имя модели " * 8, "🚀"])
def test_a_run_measured_and_the_same_run_imported_get_one_id(model: str) -> None:
    started = dt.datetime(2026, 9, 3, 12, 30, tzinfo=dt.timezone.utc)
    facts = ServerFacts(base_url="http://10.0.0.1:8000/v1", model=model, models=[model], engine="vllm", version="0.9")
    measured = build_header(Options(base_url=facts.base_url), facts, None, [], started).id
    shown = model.rsplit("/", 1)[-1]
    imported = slug_id(shown, None, "vllm", started.strftime("%Y-%m-%d-%H%M"))
    assert measured == imported and is_run_id(measured) and len(measured) <= RUN_ID_MAX
    assert run_id("🚀", None) != run_id("🛸", None)  # names with nothing to transliterate stay apart


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "run.json"
    write_bundle(path, Bundle(id="run", model="m", engine=Engine(name="e")))
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_atomic(path, "text, not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == before and decode_bundle(before).id == "run"
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # shareable, not mkstemp's private mode


def test_inputs_that_could_block_are_refused_without_being_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, reason in ((fifo, "not a regular file"), (tmp_path, "a folder"), (tmp_path / "none", "no such file")):
        with pytest.raises(Unreadable, match=f"cannot read: {reason}"):
            read_input(path)


def test_launch_words_fall_back_to_a_plain_split_on_unbalanced_quotes() -> None:
    assert launch_words("vllm serve 'my model' --tp 2") == ["vllm", "serve", "my model", "--tp", "2"]
    assert launch_words("vllm serve 'my model --tp 2") == ["vllm", "serve", "'my", "model", "--tp", "2"]
    assert launch_words(None) == launch_words("") == []


@pytest.mark.parametrize(("text", "where", "message"), [
    ('{"id" 1}', "1:7", "invalid JSON: expected ':'"),
    ('{\n', "1:2", "invalid JSON: unexpected end of file"),
    ("[]", "$", "expected an object"),
])
def test_the_runner_and_sitegen_word_a_bad_json_file_alike(tmp_path: Path, text: str, where: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError) as published:
        load_bundle(path)
    with pytest.raises(OptionError) as simulated:
        load_sim_config(path)
    assert published.value.line() == str(simulated.value) == f"{path}:{where}: {message}"


def test_the_eta_and_the_probe_estimate_are_one_estimate() -> None:
    plan = PlanSpec(contexts=[1024, 8192], prefill_contexts=[1024, 8192, 16384], concurrency=[1, 4, 64],
                    duration=10, max_output=512, kv_capacity=65536, repeats=2)
    items = measuring_order(plan)
    assert estimate_seconds(plan) == estimate_seconds(plan, items)
    assert estimate_seconds(plan, []) == 0
    # × 64 is over capacity at both contexts: 4 cells run, twice each; prefill costs its tokens at 10,000 tok/s.
    assert estimate_seconds(plan, items, 3.0) == pytest.approx(4 * 2 * (10 + 3.0) + (1024 + 8192 + 16384) / 10_000)
