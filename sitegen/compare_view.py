"""What a comparison page and the compare picker show of runs, as display values for their templates."""

from __future__ import annotations

from markupsafe import Markup

from runner.bundle import formats as f
from runner.bundle.schema import Bundle
from sitegen import charts, compare, runview
from sitegen.noise import noise_sentence, within_noise
from sitegen.summary import valued_by_cell


def shown_totals(bundle: Bundle, view: runview.RunView) -> dict[tuple[int, int], str]:
    """Each matrix cell's text by (context, concurrency), as the run's view shows it: the total
    tok/s of every cell with a value, formatted once per run rather than once per comparison."""
    return {(context, cell.concurrency): cell.value
            for row, context in zip(view.matrix, runview.contexts_of(bundle)) for cell in row.cells}


def compare_rows(a: Bundle, b: Bundle, noise: dict[tuple[int, int], bool],
                 views: tuple[runview.RunView, runview.RunView], valued: compare.Valued | None = None) -> list[dict]:
    """The ratio matrix as display rows: "1.23×" and a direction class per cell; "≈" marks a
    difference within the noise of the runs' repeats. Each run's tok/s are the texts of its view;
    `valued` as ratio_matrix takes it."""
    shown_a, shown_b = shown_totals(a, views[0]), shown_totals(b, views[1])
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
            cells.append({"text": text, "class": direction, "n": cell.concurrency,
                          "a": shown_a[key] if cell.a_tok_s is not None else f.EMPTY,
                          "b": shown_b[key] if cell.b_tok_s is not None else f.EMPTY})
        rows.append({"label": f.context_label(row.context_tokens), "cells": cells})
    return rows


def compare_page(a: Bundle, b: Bundle, why: str, views: tuple[runview.RunView, runview.RunView],
                 decode_blocks: tuple[Markup, Markup]) -> dict:
    """Everything compare.html reads of two runs: `a` is the baseline; the decode blocks are
    the runs' compact matrices, rendered once per run and shared by its comparisons."""
    valued = (valued_by_cell(a), valued_by_cell(b))
    verdicts = within_noise(a, b, valued)
    return {
        "a": a, "b": b, "why": why, "view_a": views[0], "view_b": views[1],
        "decode_a": decode_blocks[0], "decode_b": decode_blocks[1],
        "ratios": compare_rows(a, b, verdicts, views, valued), "diffs": compare.field_diffs(a, b, (views[0].sections, views[1].sections)), "noise": noise_sentence(verdicts),
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
        "rows": [
            {"label": row.label, "cells": [{"value": c.value, "note": c.note, "heat": c.heat, "status": c.status} for c in row.cells]}
            for row in view.matrix
        ],
        "totals": {f"{c.context_tokens}x{c.concurrency}": c.total_tok_s for c in bundle.decode if c.total_tok_s is not None},
        "contexts": {row.label: c for row, c in zip(view.matrix, runview.contexts_of(bundle))},
    }
    return "window.speedMatrixRun(" + charts.figure_script_json(record) + ");\n"
