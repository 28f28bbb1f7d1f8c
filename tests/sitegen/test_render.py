"""The site's Jinja environment: its filters escape whatever a bundle holds."""

from __future__ import annotations

from sitegen.render import table_cells


def test_table_cells_escape_every_value() -> None:
    assert table_cells(["Sustained decode", "8K", "<b>&", '"q"']) == (
        '<td>Sustained decode</td><td>8K</td><td>&lt;b&gt;&amp;</td><td>&#34;q&#34;</td>'
    )


def test_table_cells_keep_values_that_hold_the_separator_apart() -> None:
    assert table_cells(["a\0b", "<c>"]) == "<td>a\0b</td><td>&lt;c&gt;</td>"


def test_a_one_value_row_is_one_cell() -> None:
    assert table_cells(["x"]) == "<td>x</td>"


def test_every_output_of_the_site_environment_is_escaped_as_markupsafe_escapes() -> None:
    """The environment's cheaper escape (escape_output, compiled in for each {{ }}) writes what
    markupsafe's escape writes, for plain strings, markup-like text, numbers and Markup alike."""
    from markupsafe import Markup, escape

    from sitegen.render import DEFAULT_TEMPLATES, make_environment

    env = make_environment(DEFAULT_TEMPLATES)
    template = env.from_string("{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}")
    values = {"a": "1,234.5", "b": "<script>alert('x')</script> & \"q\"", "c": 64, "d": 0.731, "e": Markup("<i>ok</i>")}
    assert template.render(**values) == "|".join(str(escape(v)) for v in values.values())


def test_a_matrix_cell_escapes_its_texts_and_leaves_ttft_out_when_compact() -> None:
    from sitegen.render import matrix_td
    from sitegen.runview import MatrixCell

    cell = MatrixCell("8K", 4, "Distorted", "1,234.5", "Distorted", "90 ms TTFT", None, "client <lag>")
    assert matrix_td(cell, compact=False) == (
        '<td class="cell status-distorted" title="client &lt;lag&gt;"><span class="value">1,234.5</span>'
        '<span class="note">Distorted</span><span class="ttft">90 ms TTFT</span></td>'
    )
    assert "ttft" not in matrix_td(cell, compact=True)


def test_the_row_filters_escape_what_a_bundle_holds() -> None:
    """Facts, prefill items and capacity answers are written by filters, not template outputs: each
    text a bundle can carry is escaped there."""
    from sitegen.capacity import Answer
    from sitegen.render import capacity_td, fact_fields, prefill_li
    from sitegen.runview import Field, PrefillItem

    assert "<dd>&lt;b&gt;&amp;</dd>" in fact_fields([Field("GPU", "<b>&")])
    item = PrefillItem("8K context", "Failed", "", "Failed", 'timed "out" <x>')
    assert prefill_li(item) == ('<li class="status-failed" title="timed &#34;out&#34; &lt;x&gt;"><span class="label">8K context</span> '
                                '<strong class="value">Failed</strong> </li>')
    found = Answer(context="8K", requests="<4>", total="1.0", per_gpu="—", usd="—", qualified=True)
    assert "&lt;4&gt; at once" in capacity_td(found, "none")
