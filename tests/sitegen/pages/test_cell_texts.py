"""The texts _cells.html's macros write with autoescape off: each escaped once, whatever a bundle holds."""

from __future__ import annotations

from markupsafe import escape

from sitegen.pages.cell_texts import capacity_texts, field_texts, matrix_texts, prefill_texts, ratio_texts, table_texts
from sitegen.pages.render import DEFAULT_TEMPLATES, make_environment
from sitegen.views.capacity_view import Answer, PresetRow
from sitegen.views.runview import Field, MatrixCell, MatrixRow, PrefillItem

ENV = make_environment(DEFAULT_TEMPLATES)
HOSTILE = "<b>\"x\" & 'y'</b>"


def _macro(name: str, *args: object) -> str:
    return ENV.from_string("{{ cells." + name + "(*args) }}").render(args=args)


def test_a_matrix_cell_escapes_its_texts() -> None:
    rows = [MatrixRow("8K", [MatrixCell("8K", 4, "Distorted", "1,234.5", "Distorted", "90 ms TTFT", None, "client <lag>")])]
    assert _macro("matrix_rows", matrix_texts(rows)) == (
        '\n      <tr><th scope="row">8K</th><td class="cell status-distorted" title="client &lt;lag&gt;"><span class="value">1,234.5</span>'
        '<span class="note">Distorted</span><span class="ttft">90 ms TTFT</span></td></tr>\n    '
    )


def test_a_matrix_cell_of_heat_zero_is_still_shaded_and_one_without_heat_is_not() -> None:
    rows = [MatrixRow("8K", [MatrixCell("8K", 1, "Valid", "1.0", "", "", 0.0, None), MatrixCell("8K", 2, "", "—", "", "", None, None)])]
    html = _macro("matrix_rows", matrix_texts(rows))
    assert '<td class="cell status-valid" style="--heat:0.0"><span class="value">1.0</span></td>' in html
    assert '<td class="cell status-none"><span class="value">—</span></td>' in html


def test_every_text_of_a_matrix_row_is_escaped() -> None:
    rows = [MatrixRow(HOSTILE, [MatrixCell(HOSTILE, 4, "Failed", HOSTILE, HOSTILE, HOSTILE, None, HOSTILE)])]
    html = _macro("matrix_rows", matrix_texts(rows))
    assert "<b>" not in html and html.count(str(escape(HOSTILE))) == 5


def test_the_measurements_table_escapes_each_value_only_where_one_needs_it() -> None:
    plain = ["Sustained decode", "8K", "4", "Valid", "1,234.5"]
    assert _macro("measurement_rows", table_texts([plain])) == (
        '<tr><td>Sustained decode</td><td>8K</td><td>4</td><td>Valid</td><td>1,234.5</td></tr>\n'
    ), "a Valid row needs no class: only the others are greyed or coloured"
    html = _macro("measurement_rows", table_texts([plain, ["Prefill", "8K", "1", "Failed", HOSTILE]]))
    assert "<td>Sustained decode</td>" in html
    assert f'<tr class="status-failed"><td>Prefill</td><td>8K</td><td>1</td><td>Failed</td><td>{escape(HOSTILE)}</td></tr>' in html


def test_the_ratio_matrix_escapes_its_cells_and_both_runs_figures() -> None:
    rows = [{"label": "8K", "cells": [{"text": "1.23×", "class": "ratio-up", "n": 4, "sub": f"{HOSTILE} vs 1,000.0"}]}]
    assert _macro("ratio_rows", ratio_texts(rows)) == (
        f'<tr><th scope="row">8K</th><td class="ratio-up"><span class="value">1.23×</span><span class="sub">{escape(HOSTILE)} vs 1,000.0</span></td></tr>'
    )


def test_prefill_items_facts_and_capacity_answers_escape_what_a_bundle_holds() -> None:
    item = PrefillItem("8K context", "Failed", "", "Failed", 'timed "out" <x>')
    assert _macro("prefill_items", prefill_texts([item])) == (
        '\n    <li class="status-failed" title="timed &#34;out&#34; &lt;x&gt;"><span class="label">8K context</span> '
        '<strong class="value">Failed</strong> </li>\n  '
    )
    assert _macro("fact_fields", field_texts([Field("GPU", "<b>&")])) == "\n        <div><dt>GPU</dt><dd>&lt;b&gt;&amp;</dd></div>"
    found = Answer(context="8K", requests="<4>", total="1.0", per_gpu="—", usd="—", qualified=True)
    missed = Answer(context="8K", requests="—", total="—", per_gpu="—", usd="—", qualified=False)
    html = _macro("capacity_rows", capacity_texts([PresetRow("8K", [found, missed])]), escape("<none>"))
    assert html == ('<tr><th scope="row">8K</th><td><span class="value">&lt;4&gt; at once</span><span class="sub">1.0 tok/s · — per GPU</span></td>'
                    '<td><span class="none">&lt;none&gt;</span></td></tr>\n    ')
