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
