"""What a comparison page and the compare picker show of runs, as display values for their templates."""

from __future__ import annotations

from markupsafe import Markup

from runner.bundle import formats as f
from runner.bundle.schema import Bundle
from sitegen import charts, compare, runview
from sitegen.noise import noise_sentence, within_noise


def compare_rows(a: Bundle, b: Bundle, noise: dict[tuple[int, int], bool]) -> list[dict]:
    """The ratio matrix as display rows: "1.23×" and a direction class per cell; "≈" marks a
    difference within the noise of the runs' repeats."""
    rows = []
    for row in compare.ratio_matrix(a, b):
        cells = []
        for cell in row.cells:
            ratio = cell.ratio
            text = f"{ratio:.2f}×" if ratio is not None else f.EMPTY
            direction = "" if ratio is None or abs(ratio - 1) < 0.02 else ("ratio-up" if ratio > 1 else "ratio-down")
            if noise.get((row.context_tokens, cell.concurrency)):
                text, direction = f"≈ {text}", "within-noise"
            cells.append({"text": text, "class": direction, "n": cell.concurrency, "a": f.tok_s(cell.a_tok_s), "b": f.tok_s(cell.b_tok_s)})
        rows.append({"label": f.context_label(row.context_tokens), "cells": cells})
    return rows


def compare_page(a: Bundle, b: Bundle, why: str, views: tuple[runview.RunView, runview.RunView],
                 decode_blocks: tuple[Markup, Markup]) -> dict:
    """Everything compare.html reads of two runs: `a` is the baseline; the decode blocks are
    the runs' compact matrices, rendered once per run and shared by its comparisons."""
    verdicts = within_noise(a, b)
    return {
        "a": a, "b": b, "why": why, "view_a": views[0], "view_b": views[1],
        "decode_a": decode_blocks[0], "decode_b": decode_blocks[1],
        "ratios": compare_rows(a, b, verdicts), "diffs": compare.field_diffs(a, b), "noise": noise_sentence(verdicts),
    }


def picker_script(bundle: Bundle, view: runview.RunView) -> str:
    """The run's matrix as a script the compare picker loads (script tags work from file://)."""
    record = {
        "id": bundle.id,
        "title": view.title,
        "summary": view.summary_engine,
        "launch": bundle.launch_command or "",
        "facts": list(compare.section_values(bundle).items()),
        "concurrencies": view.concurrencies,
        "rows": [
            {"label": row.label, "cells": [{"value": c.value, "note": c.note, "heat": c.heat, "status": c.status} for c in row.cells]}
            for row in view.matrix
        ],
        "totals": {f"{c.context_tokens}x{c.concurrency}": c.total_tok_s for c in bundle.decode if c.total_tok_s is not None},
        "contexts": {row.label: c for row, c in zip(view.matrix, runview.contexts_of(bundle))},
    }
    return "window.speedMatrixRun(" + charts.figure_script_json(record) + ");\n"
