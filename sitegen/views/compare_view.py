"""What a comparison page and the compare picker show of runs, as display values for their templates."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from runner.bundle import formats as f
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.figures import compare
from sitegen.figures.noise import noise_sentence, within_noise
from sitegen.figures.serving import acceptance_length, given, joules_per_output_token, tok_s_per_kw
from sitegen.figures.summary import valued_by_cell
from sitegen.views import charts, runview
from sitegen.views.figure_formats import joules, share, significant
from sitegen.views.serving_view import INVALID


def _energy_text(shown: Callable[[DecodeCell], str]) -> Callable[[DecodeCell], str]:
    """An energy figure's text: the figure of a valid reading, "Invalid" for an invalid one, "—" without one."""
    def text(cell: DecodeCell) -> str:
        energy = given(cell.energy)
        return f.EMPTY if energy is None else shown(cell) if energy.valid else INVALID
    return text


# The figures a comparison sets side by side, by the reading they come from: a heading and the cell's text.
SPECULATIVE_FIGURES = (
    ("Mean acceptance length", lambda c: significant(acceptance_length(c))),
    ("Acceptance rate", lambda c: share(c.speculative.acceptance_rate) if given(c.speculative) else f.EMPTY),
)
ENERGY_FIGURES = (
    ("J per output token", _energy_text(lambda c: joules(joules_per_output_token(c)))),
    ("tok/s per kW", _energy_text(lambda c: f.tok_s(tok_s_per_kw(c)))),
)


class ServingRow(msgspec.Struct, frozen=True):
    """One decode cell of the comparison's speculative decoding and energy table: each run's figures."""

    context: str
    concurrency: int
    b: list[str]
    a: list[str]


class ServingComparison(msgspec.Struct, frozen=True):
    """Both runs' acceptance and energy figures, cell by cell, under the headings of the figures either run has."""

    headers: list[str]
    rows: list[ServingRow]


def serving_comparison(a: Bundle, b: Bundle) -> ServingComparison | None:
    """The cells where either run has speculative decoding figures or an energy reading, each with both runs'
    figures (those of a kind neither run has left out); None when neither has any."""
    read = [c for run in (a, b) for c in run.decode if given(c.speculative) or given(c.energy)]
    if not read:
        return None
    figures = ((SPECULATIVE_FIGURES if any(given(c.speculative) for c in read) else ())
               + (ENERGY_FIGURES if any(given(c.energy) for c in read) else ()))
    by_cell_a, by_cell_b = ({(c.context_tokens, c.concurrency): c for c in run.decode} for run in (a, b))

    def texts(cell: DecodeCell | None) -> list[str]:
        return [shown(cell) if cell is not None else f.EMPTY for _, shown in figures]

    keys = sorted({(c.context_tokens, c.concurrency) for c in read})
    rows = [ServingRow(f.context_label(context), n, texts(by_cell_b.get((context, n))), texts(by_cell_a.get((context, n))))
            for context, n in keys]
    return ServingComparison([header for header, _ in figures], rows)


def shown_cells(bundle: Bundle, view: runview.RunView) -> dict[tuple[int, int], runview.MatrixCell]:
    """Each matrix cell by (context, concurrency), as the run's view shows it: its total tok/s
    and status word formatted once per run rather than once per comparison."""
    return {(context, cell.concurrency): cell for row, context in zip(view.matrix, runview.contexts_of(bundle)) for cell in row.cells}


def _cell_text(cell: runview.MatrixCell | None, valued: bool) -> str:
    """A run's side of a ratio cell: its tok/s where the ratio used it, else its status word, else "—"."""
    if cell is None:
        return f.EMPTY
    return cell.value if valued else cell.note or cell.status or f.EMPTY


def compare_rows(a: Bundle, b: Bundle, noise: dict[tuple[int, int], bool],
                 views: tuple[runview.RunView, runview.RunView], valued: compare.Valued | None = None) -> list[dict]:
    """The ratio matrix as display rows: "1.23×" and a direction class per cell, with both runs'
    figures; "≈" marks a difference within the noise of the runs' repeats. Each run's tok/s are the
    texts of its view; `valued` as ratio_matrix takes it."""
    shown_a, shown_b = shown_cells(a, views[0]), shown_cells(b, views[1])
    rows = []
    for row in compare.ratio_matrix(a, b, valued):
        cells = []
        for cell in row.cells:
            key = (row.context_tokens, cell.concurrency)
            ratio = cell.ratio
            text = f"{ratio:.2f}×" if ratio is not None else f.EMPTY
            direction = "" if ratio is None or abs(ratio - 1) < 0.02 else ("ratio-up" if ratio > 1 else "ratio-down")
            if noise.get(key):
                text, direction = f"≈ {text}", "within-noise"
            sides = _cell_text(shown_b.get(key), cell.b_tok_s is not None), _cell_text(shown_a.get(key), cell.a_tok_s is not None)
            # Under the ratio, both runs' figures (the compared run first), or one status word that both share.
            sub = sides[0] if ratio is None and sides[0] == sides[1] else " vs ".join(sides)
            cells.append({"text": text, "class": direction, "n": cell.concurrency, "sub": sub})
        rows.append({"label": f.context_label(row.context_tokens), "cells": cells})
    return rows


def compare_page(a: Bundle, b: Bundle, why: str, views: tuple[runview.RunView, runview.RunView]) -> dict:
    """Everything compare.html reads of two runs: `a` is the baseline."""
    valued = (valued_by_cell(a), valued_by_cell(b))
    verdicts = within_noise(a, b, valued)
    return {
        "a": a, "b": b, "why": why, "view_a": views[0], "view_b": views[1],
        "ratios": compare_rows(a, b, verdicts, views, valued), "diffs": compare.field_diffs(a, b, (views[0].sections, views[1].sections)), "noise": noise_sentence(verdicts),
        "serving": serving_comparison(a, b),
    }


def picker_script(bundle: Bundle, view: runview.RunView) -> str:
    """The run's matrix as a script the compare picker loads (script tags work from file://)."""
    record = {
        "id": bundle.id,
        "title": view.title,
        "summary": view.summary_engine,
        "launch": bundle.launch_command or "",
        "facts": list(compare.section_values(bundle, view.sections).items()),
        "concurrencies": view.concurrencies,
        # A row per context: [label, a [value, note, heat, status] per cell], kept short as every run has one.
        "rows": [[row.label, [[c.value, c.note, c.heat, c.status] for c in row.cells]] for row in view.matrix],
        "totals": {f"{c.context_tokens}x{c.concurrency}": c.total_tok_s for c in bundle.decode if c.total_tok_s is not None},
        "contexts": {row.label: c for row, c in zip(view.matrix, runview.contexts_of(bundle))},
    }
    return "window.speedMatrixRun(" + charts.figure_script_json(record) + ");\n"
