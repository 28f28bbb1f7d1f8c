"""The site's Jinja environment: Jinja's own, escaping every output, and a templates folder that
restyles every table cell through _cells.html."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
from markupsafe import Markup, escape

from runner.bundle.schema import decode_bundle
from sitegen.errors import InputError
from sitegen.pages.render import DEFAULT_TEMPLATES, make_environment
from sitegen.views.runview import run_view
from tests.builders import ROOT

RATIO_CELL = "<td{% if direction %}"
CELL = '<td class="cell status-{{ status }}"'


def _templates(tmp_path: Path) -> Path:
    folder = tmp_path / "templates"
    shutil.copytree(DEFAULT_TEMPLATES, folder)
    return folder


def test_the_environment_is_jinjas_own_with_its_own_code_generator() -> None:
    """No private method of Jinja's is overridden: an upgrade of Jinja compiles the templates as it compiles any."""
    env = make_environment(DEFAULT_TEMPLATES)
    assert type(env) is jinja2.Environment
    assert env.code_generator_class is jinja2.compiler.CodeGenerator


def test_every_output_of_the_site_environment_is_escaped_as_markupsafe_escapes() -> None:
    env = make_environment(DEFAULT_TEMPLATES)
    template = env.from_string("{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}")
    values = {"a": "1,234.5", "b": "<script>alert('x')</script> & \"q\"", "c": 64, "d": 0.731, "e": Markup("<i>ok</i>")}
    assert template.render(**values) == "|".join(str(escape(v)) for v in values.values())


def test_a_templates_folder_restyles_every_matrix_cell_of_a_run_page_and_every_ratio_cell(tmp_path: Path) -> None:
    """`sitegen build --templates` with a _cells.html whose matrix and ratio cells are changed: each run
    page's cells, one per context and concurrency, and each comparison's are written by it."""
    templates = _templates(tmp_path)
    cells = templates / "_cells.html"
    assert cells.read_text().count(CELL) == 1 and cells.read_text().count(RATIO_CELL) == 1
    cells.write_text(cells.read_text().replace(CELL, '<td data-restyled class="cell status-{{ status }}"')
                     .replace(RATIO_CELL, "<td data-restyled{% if direction %}"))
    out = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "sitegen", "build", "--content", str(ROOT / "content"), "--out", str(out),
                           "--templates", str(templates)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for path in sorted((ROOT / "content" / "runs").glob("*.json")):
        bundle = decode_bundle(path.read_bytes())
        page = (out / "runs" / bundle.id / "index.html").read_text()
        expected = sum(len(row.cells) for row in run_view(bundle).matrix)
        assert expected > 0
        assert page.count('<td data-restyled class="cell status-') == expected
        assert len(re.findall(r'<td[^>]*class="cell ', page)) == expected
    comparisons = [p for p in (out / "compare").glob("*-vs-*.html")]
    assert comparisons
    for page in comparisons:
        table = page.read_text().split('<table class="matrix ratio">')[1].split("</table>")[0]
        assert table.count("<td") == table.count("<td data-restyled") > 0


def test_a_templates_folder_without_cells_is_one_error_line(tmp_path: Path) -> None:
    templates = _templates(tmp_path)
    (templates / "_cells.html").unlink()
    with pytest.raises(InputError) as raised:
        make_environment(templates)
    assert raised.value.line() == f"{templates}: no _cells.html, the rows and cells of every table: copy it from the project's templates/"


def test_a_cells_template_that_does_not_parse_is_one_error_line_naming_its_line(tmp_path: Path) -> None:
    templates = _templates(tmp_path)
    (templates / "_cells.html").write_text("{% macro matrix_rows(rows) %}\n{% for row in rows %}\n{% endmacro %}\n")
    with pytest.raises(InputError) as raised:
        make_environment(templates)
    assert raised.value.line().startswith(f"{templates / '_cells.html'}:line 3: ")
