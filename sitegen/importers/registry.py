"""The registry of importers: which format a file is, by content, never by file name.

`IMPORTERS` lists every format in the order they are tried; the first whose `recognises`
says yes reads the file. Most formats are one bundle a file; the files of a benchmark sweep
(vllm bench serve, GuideLLM, AIPerf) are read into SweepFiles that `sweep.sweep_bundle`
joins into one bundle.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runner.bundle.schema import Bundle
from runner.bundle.terminal_text import printable
from sitegen.content.loader import read_input, read_json
from sitegen.errors import InputError
from sitegen.importers import (
    aiperf,
    bundle_json,
    captured_page,
    guidellm,
    llm_inference_bench,
    vllm_bench_serve,
)
from sitegen.importers.importer import Found, Importer, Source, finish
from sitegen.importers.options import ImportOptions
from sitegen.importers.sweep import SweepFile, sweep_bundle

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # how JSON writes a surrogate: only then are strings searched
_SURROGATE = re.compile("[\ud800-\udfff]")
# The sweep tools first: their files are the most specific; a captured page is any text that is not JSON.
IMPORTERS: tuple[Importer, ...] = (
    vllm_bench_serve.IMPORTER, guidellm.IMPORTER, aiperf.IMPORTER,
    llm_inference_bench.IMPORTER, bundle_json.IMPORTER, captured_page.IMPORTER,
)


def import_file(path: Path, options: ImportOptions) -> Bundle:
    """Read one file of any known format and return its bundle (a sweep file alone makes a bundle too)."""
    source = read_source(path, options)
    return sweep_bundle([source], options) if isinstance(source, SweepFile) else source


def read_source(path: Path, options: ImportOptions) -> Bundle | SweepFile:
    """One file of any known format: its finished bundle, or one file of a sweep."""
    source = _source(path)
    importer = next((i for i in IMPORTERS if i.recognises(source)), None)
    if importer is None:
        tools = [i.name for i in IMPORTERS if i is not captured_page.IMPORTER]
        raise InputError(path, None, f"unknown JSON format: not the output of {', '.join(tools[:-1])} or {tools[-1]}")
    found = importer.read(source)
    return finish(found, options, path) if isinstance(found, Found) else found


def result_files(folder: Path) -> list[Path]:
    """The sweep tools' result files anywhere under folder (a `vllm bench sweep` folder, AIPerf artifact folders)."""
    patterns = [i.folder_files for i in IMPORTERS if i.folder_files]
    found = sorted({p for pattern in patterns for p in folder.rglob(pattern) if p.is_file()})
    if not found:
        raise InputError(folder, None, f"no result files in this folder (looked for {', '.join(patterns)})")
    return found


def _source(path: Path) -> Source:
    """The file's text, and its JSON when it looks like JSON."""
    raw = read_input(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"byte {exc.start}", "not UTF-8 text") from None
    if not text.lstrip().startswith(("{", "[")):
        return Source(path, text)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        # Python's json reads the NaN and Infinity that Python tools write; what it cannot
        # read is worded by the reader `sitegen build` uses, so both commands say the same.
        data = read_json(path, text.encode())
    if _SURROGATE_ESCAPE.search(text):
        _refuse_surrogates(data, path)
    return Source(path, text, data, is_json=True)


def _refuse_surrogates(data: Any, path: Path) -> None:
    """Refuse a string (or key) holding a lone UTF-16 surrogate, which a \\u escape can write but no text holds:
    one error at its `$.path`, before it reaches a bundle that could not be written."""
    stack: list[tuple[Any, str]] = [(data, "$")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str) and _SURROGATE.search(node):
            shown = where.encode("utf-8", "backslashreplace").decode()  # a key on the path may hold one too
            raise InputError(path, shown, f"a lone UTF-16 surrogate ({printable(node, 40)!r}): not text")
        if isinstance(node, dict):
            stack += [(key, f"{where}.{key}") for key in node] + [(value, f"{where}.{key}") for key, value in node.items()]
        elif isinstance(node, list):
            stack += [(item, f"{where}[{i}]") for i, item in enumerate(node)]
