"""Jinja rendering: one environment for the whole site, loaded from templates/."""

from __future__ import annotations

from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from runner.bundle import formats as f
from runner.bundle.display import PAGE_TEXT, status_slug
from runner.bundle.schema import Bundle
from sitegen import runview

DEFAULT_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
SITE_NAME = "speed-matrix"


def status_class(status: str) -> str:
    """CSS class suffix of a status: "Over capacity" -> "over-capacity"; a cell without one is "none"."""
    return status_slug(status) or "none"


def table_cells(row: list[str]) -> Markup:
    """A table row's values as `<td>` cells, each escaped.

    The row is escaped in one call, joined by NUL, which escaping leaves alone and which no
    value may hold (else each value is escaped alone): a run page has ~700 such cells.
    """
    joined = "\0".join(row)
    if joined.count("\0") == len(row) - 1:
        html = str(escape(joined)).replace("\0", "</td><td>")
    else:
        html = "</td><td>".join(str(escape(value)) for value in row)
    return Markup(f"<td>{html}</td>")


def make_environment(templates: Path) -> jinja2.Environment:
    """Autoescaping, strict environment: every string a page shows is escaped."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        bytecode_cache=jinja2.FileSystemBytecodeCache(),  # compiled templates, keyed by their source, reused by the next build
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,  # a build reads each template once: no stat of its file at every include
    )
    env.filters["status_class"] = status_class
    env.filters["cells"] = table_cells
    env.globals["site_name"] = SITE_NAME
    env.globals["page_text"] = PAGE_TEXT  # the fixed words of #matrix, which the page importer finds again
    return env


def settings_line(bundle: Bundle) -> str:
    """The benchmark settings in one line for the Reproduce block."""
    run = bundle.run
    parts = []
    if run.seconds_per_measurement is not None:
        parts.append(f"{f.seconds_setting(run.seconds_per_measurement)} per measurement")
    if run.max_output_tokens is not None:
        parts.append(f"max output {f.tokens_setting(run.max_output_tokens)}")
    shape = runview.summary_shape(bundle)
    if shape:
        parts.append(shape)
    return "; ".join(parts) or "not recorded"


def render_run_page(env: jinja2.Environment, bundle: Bundle, view: runview.RunView, context: dict) -> str:
    """The HTML of one run page; `context` carries the shared values (nav, links from the page) and its sections."""
    return env.get_template("run.html").render(bundle=bundle, view=view, settings=settings_line(bundle), **context)
