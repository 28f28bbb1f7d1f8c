"""Jinja rendering: one environment for the whole site, loaded from templates/."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import msgspec
from jinja2.compiler import CodeGenerator, Frame
from jinja2.nodes import Expr
from markupsafe import Markup, escape

from runner.bundle import formats as f
from runner.bundle.display import PAGE_TEXT, status_slug
from runner.bundle.schema import Bundle
from sitegen import runview
from sitegen.capacity import Answer, PresetRow

DEFAULT_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
SITE_NAME = "speed-matrix"


def status_class(status: str) -> str:
    """CSS class suffix of a status: "Over capacity" -> "over-capacity"; a cell without one is "none"."""
    return status_slug(status) or "none"


_TO_ESCAPE = re.compile(r"[&<>\"']")


def escape_output(value: object) -> str:
    """What `{{ value }}` writes: markupsafe's escape, which a plain string with nothing to escape
    (most of a page: figures, labels, statuses) skips, as does Markup (escaped already). markupsafe
    makes a new Markup object of every value, ~1 us each, and a run page and its comparisons print
    ~1,200 of them."""
    kind = type(value)
    if kind is str and _TO_ESCAPE.search(value) is None or kind is Markup:
        return value
    return escape(value)


class _CodeGenerator(CodeGenerator):
    """Compiles each `{{ ... }}` of an autoescaping template to escape_output instead of escape (the
    hook Jinja's own NativeCodeGenerator overrides); the text written is the same."""

    def _output_child_pre(self, node: Expr, frame: Frame, finalize: CodeGenerator._FinalizeInfo) -> None:
        if frame.eval_ctx.autoescape and not frame.eval_ctx.volatile:
            self.write("environment.escape_output(")
            if finalize.src is not None:
                self.write(finalize.src)
            return
        super()._output_child_pre(node, frame, finalize)


class SiteEnvironment(jinja2.Environment):
    """The site's Jinja environment: autoescaping, with the cheaper escape of plain strings."""

    code_generator_class = _CodeGenerator
    escape_output = staticmethod(escape_output)


def matrix_td(cell: runview.MatrixCell, compact: bool) -> str:
    """One decode matrix cell as `<td>`, escaped: status class, heat tint, failure reason as its title,
    then value, status word and TTFT (not in the `compact` form comparisons show)."""
    head, ttft = _td_parts(cell)
    return head + ("</td>" if compact else ttft + "</td>")


def _td_parts(cell: runview.MatrixCell) -> tuple[str, str]:
    """A cell's `<td>` up to its TTFT, and its TTFT span (empty when it has none): both forms of it."""
    cell = _escaped_texts(cell)
    html = f'<td class="cell status-{status_class(cell.status)}"'
    if cell.heat is not None:
        html += f' style="--heat:{cell.heat}"'  # a float's repr: digits, a point, maybe an exponent
    if cell.error:
        html += f' title="{cell.error}"'
    html += ">"
    if cell.value:
        html += f'<span class="value">{cell.value}</span>'
    if cell.note:
        html += f'<span class="note">{cell.note}</span>'
    return html, f'<span class="ttft">{cell.ttft}</span>' if cell.ttft else ""


_CELL_TEXTS = ("status", "value", "note", "ttft", "error")


def _escaped_texts(cell: runview.MatrixCell) -> runview.MatrixCell:
    """The cell with its texts escaped, all checked in one search: the usual cell (figures and status
    words) has nothing to escape and is returned as it is."""
    if _TO_ESCAPE.search("".join([cell.status, cell.value, cell.note, cell.ttft, cell.error or ""])) is None:
        return cell
    return msgspec.structs.replace(cell, **{name: str(escape(getattr(cell, name))) for name in _CELL_TEXTS if getattr(cell, name)})


def matrix_bodies(rows: list[runview.MatrixRow]) -> dict[bool, Markup]:
    """The decode matrix's body in its full and its compact form (by `compact`), from one pass over its
    cells: a `<tr>` per context, its label then its cells, each row on a line of its own as _decode.html
    indents them. A run's page shows the one, its comparisons the other.

    Written here rather than as loops in _decode.html: a page and its comparisons show ~150 cells,
    and a template spends an output step on each, a Markup on each filter's result.
    """
    full, compact = [], []
    for row in rows:
        start = f'\n      <tr><th scope="row">{escape_output(row.label)}</th>'
        parts = [_td_parts(cell) for cell in row.cells]
        full.append(f'{start}{"".join([head + ttft + "</td>" for head, ttft in parts])}</tr>\n    ')
        compact.append(f'{start}{"".join([head + "</td>" for head, _ in parts])}</tr>\n    ')
    return {False: Markup("".join(full)), True: Markup("".join(compact))}


def ratio_td(cell: dict) -> str:
    """One ratio matrix cell as `<td>` (compare_view.compare_rows), escaped: direction class, both
    runs' tok/s as its title, the ratio."""
    return (f'<td class="{escape_output(cell["class"])}" title="{escape_output(cell["b"])} vs '
            f'{escape_output(cell["a"])} tok/s">{escape_output(cell["text"])}</td>')


def ratio_rows(rows: list[dict]) -> Markup:
    """The ratio matrix's body: a `<tr>` per context, its label then its ratio_td cells; one filter
    call for the whole matrix, as matrix_bodies."""
    return Markup("".join([f'<tr><th scope="row">{escape_output(row["label"])}</th>{"".join([ratio_td(cell) for cell in row["cells"]])}</tr>'
                           for row in rows]))


def table_cells(row: list[str]) -> str:
    """A table row's values as `<td>` cells, each escaped (a run page has ~700 such cells)."""
    return f"<td>{'</td><td>'.join(map(escape_output, row))}</td>"


def table_rows(rows: list[list[str]]) -> Markup:
    """The measurements table's rows as `<tr>`s, each classed by its status (row[3]) and followed by
    the line break and indent that separate rows in _measurements.html.

    Written here rather than as a template loop: a run page has ~60 rows, and the loop spent five
    output steps on each. A table with nothing to escape (the usual: figures and statuses) is checked
    in one search and its rows joined as they are.
    """
    if _TO_ESCAPE.search("".join(["".join(row) for row in rows])) is None:
        return Markup("".join([f'<tr class="status-{status_class(row[3])}"><td>{"</td><td>".join(row)}</td></tr>\n    ' for row in rows]))
    return Markup("".join([f'<tr class="status-{escape_output(status_class(row[3]))}">{table_cells(row)}</tr>\n    ' for row in rows]))


def prefill_li(item: runview.PrefillItem) -> str:
    """One prefill item as `<li>`, escaped: status class, failure reason as its title, label, value, TTFT."""
    title = f' title="{escape_output(item.error)}"' if item.error else ""
    ttft = f'<span class="ttft">{escape_output(item.ttft)}</span>' if item.ttft else ""
    return (f'<li class="status-{escape_output(status_class(item.status))}"{title}><span class="label">{escape_output(item.label)}</span> '
            f'<strong class="value">{escape_output(item.value)}</strong> {ttft}</li>')


def prefill_items(items: list[runview.PrefillItem]) -> Markup:
    """The prefill list's items, each on a line of its own as _prefill.html indents them; one filter
    call instead of a dozen template steps an item."""
    return Markup("".join([f"\n    {prefill_li(item)}\n  " for item in items]))


def capacity_td(found: Answer, none: str) -> str:
    """One answer of the capacity table as `<td>`, escaped: requests at once and the throughput then,
    or `none` where no cell meets the target."""
    if not found.qualified:
        return f'<td><span class="none">{escape_output(none)}</span></td>'
    return (f'<td><span class="value">{escape_output(found.requests)} at once</span><span class="sub">'
            f'{escape_output(found.total)} tok/s · {escape_output(found.per_gpu)} per GPU</span></td>')


def capacity_rows(rows: list[PresetRow], none: str) -> Markup:
    """The capacity table's body: a `<tr>` per context, its label then an answer per preset, each row
    followed by the line break and indent of _capacity.html; one filter call, as table_rows."""
    return Markup("".join([f'<tr><th scope="row">{escape_output(row.label)}</th>{"".join([capacity_td(a, none) for a in row.answers])}</tr>\n    '
                           for row in rows]))


def fact_fields(fields: list[runview.Field]) -> Markup:
    """A facts section's label/value pairs as `<div><dt><dd>`s, each on a line of its own as
    _matrix.html indents them; one filter call for the ~20 fields of a run page."""
    return Markup("".join([f"\n        <div><dt>{escape_output(field.label)}</dt><dd>{escape_output(field.value)}</dd></div>" for field in fields]))


def make_environment(templates: Path) -> jinja2.Environment:
    """Autoescaping, strict environment: every string a page shows is escaped."""
    env = SiteEnvironment(
        loader=jinja2.FileSystemLoader(str(templates)),
        # Compiled templates, keyed by their source, reused by the next build; a pattern of its
        # own, as they call escape_output, which another Jinja environment would not have.
        bytecode_cache=jinja2.FileSystemBytecodeCache(pattern="__speed_matrix_%s.cache"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,  # a build reads each template once: no stat of its file at every include
        cache_size=-1,  # a dict of the site's few dozen templates, not an LRU cache that takes a lock at every include
    )
    env.filters["table_rows"] = table_rows
    env.filters["ratio_rows"] = ratio_rows
    env.filters["capacity_rows"] = capacity_rows
    env.filters["fact_fields"] = fact_fields
    env.filters["prefill_items"] = prefill_items
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
