"""The test tree's rules: no module imports a test module or a conftest (shared code lives in
tests/builders.py, fixtures in conftest files), and tests/bundle/, tests/runner/ and tests/sitegen/
mirror packages that exist."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.builders import ROOT

TESTS = ROOT / "tests"
# Test folders and the source package each one mirrors.
MIRRORS = {TESTS / "bundle": ROOT / "runner" / "bundle", TESTS / "runner": ROOT / "runner", TESTS / "sitegen": ROOT / "sitegen"}


def _is_test_module(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def imports_of_test_modules(folder: Path) -> list[str]:
    """'path:line imports name' for every import of a test module or conftest in the .py files below `folder`."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [f"{path.relative_to(folder)}:{node.lineno} imports {name}" for name in names if _is_test_module(name)]
    return found


def test_no_module_imports_a_test_module_or_conftest() -> None:
    assert imports_of_test_modules(TESTS) == [], "move what is shared into tests/builders.py or a conftest fixture"


def test_the_import_rule_catches_each_form(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("from tests.conftest import ROOT\nimport tests.sitegen.test_summary\n")
    (tmp_path / "test_b.py").write_text("from tests.site import test_browser\nfrom .test_a import x\nfrom tests.builders import ROOT\n")
    assert imports_of_test_modules(tmp_path) == [
        "test_a.py:1 imports tests.conftest",
        "test_a.py:2 imports tests.sitegen.test_summary",
        "test_b.py:1 imports tests.site.test_browser",
        "test_b.py:2 imports .test_a",
    ]


def test_mirror_folders_match_source_packages() -> None:
    for tests, source in MIRRORS.items():
        for folder in [tests, *(p for p in tests.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
            package = source / folder.relative_to(tests)
            assert (package / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} mirrors no package ({package.relative_to(ROOT)})"
            assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} needs an __init__.py: test file names repeat across folders"
