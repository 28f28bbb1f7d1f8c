"""Jinja rendering: one environment for the whole site, loaded from templates/, with _cells.html's
macros (every table's rows and cells) and the filters that hand them their texts (cell_texts)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from runner.bundle import formats as f
from runner.bundle.display import PAGE_TEXT
from runner.bundle.schema import Bundle
from sitegen.errors import InputError
from sitegen.pages import cell_texts
from sitegen.views import runview
from sitegen.views.index_view import LISTED_BY
from sitegen.views.serving_view import SERVING_TEXT

DEFAULT_TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
SITE_NAME = "speed-matrix"


def make_environment(templates: Path) -> jinja2.Environment:
    """Autoescaping, strict environment: every string a page shows is escaped (a table's by cell_texts)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        # Compiled templates, keyed by their source, reused by the next build; a pattern of its own,
        # so that no code another Jinja environment compiled with other settings is read back.
        bytecode_cache=jinja2.FileSystemBytecodeCache(pattern="__speed_matrix_site_%s.cache"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,  # a build reads each template once: no stat of its file at every include
        cache_size=-1,  # a dict of the site's few dozen templates, not an LRU cache that takes a lock at every include
    )
    env.filters.update(cell_texts.FILTERS)
    env.filters["bdi"] = runview.isolated  # a name from a bundle beside other text: its direction kept to itself
    env.globals["site_name"] = SITE_NAME
    env.globals["page_text"] = PAGE_TEXT  # the fixed words of #matrix, which the page importer finds again
    env.globals["serving_text"] = SERVING_TEXT  # the fixed words of the served, speculative, energy and endpoint panels
    env.globals["cells"] = _cell_macros(env, templates)
    env.globals["listed_by"] = LISTED_BY
    return env


def _cell_macros(env: jinja2.Environment, templates: Path) -> jinja2.environment.TemplateModule:
    """_cells.html's macros, imported once for every template rather than by each page that prints a table."""
    try:
        return env.get_template("_cells.html").module
    except jinja2.TemplateNotFound:
        raise InputError(templates, None, "no _cells.html, the rows and cells of every table: copy it from the project's templates/") from None
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(exc.filename or templates / "_cells.html", f"line {exc.lineno}", exc.message or "not a template") from None


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
