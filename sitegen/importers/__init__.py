"""Importers turn other formats (captured pages, other tools' JSON) into bundles.

`read_source` detects the format by content, never by file name. Most formats are one
bundle a file; the files of a benchmark sweep (vllm bench serve, GuideLLM, AIPerf) are read
into SweepFiles that `sitegen.importers.sweep.sweep_bundle` joins into one bundle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from runner.bundle.schema import Bundle
from sitegen.errors import InputError
from sitegen.importers.options import ImportOptions, apply_options

if TYPE_CHECKING:
    from sitegen.importers.sweep import SweepFile, SweepFormat


def sweep_formats() -> list[SweepFormat]:
    """The importers of sweep tools' result files, each a module with the SweepFormat interface."""
    from sitegen.importers import aiperf, guidellm, vllm_bench_serve

    return [vllm_bench_serve, guidellm, aiperf]


def import_file(path: Path, options: ImportOptions) -> Bundle:
    """Read one file of any known format and return its bundle (a sweep file alone makes a bundle too)."""
    from sitegen.importers.sweep import SweepFile, sweep_bundle

    source = read_source(path, options)
    return sweep_bundle([source], options) if isinstance(source, SweepFile) else source


def result_files(folder: Path) -> list[Path]:
    """The sweep tools' result files anywhere under folder (a `vllm bench sweep` folder, AIPerf artifact folders)."""
    patterns = [f.FOLDER_FILES for f in sweep_formats() if f.FOLDER_FILES]
    found = sorted({p for pattern in patterns for p in folder.rglob(pattern) if p.is_file()})
    if not found:
        raise InputError(folder, None, f"no result files in this folder (looked for {', '.join(patterns)})")
    return found


def read_source(path: Path, options: ImportOptions) -> Bundle | SweepFile:
    """One file of any known format: its bundle, or one file of a sweep."""
    from sitegen.loader import read_input

    raw = read_input(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"byte {exc.start}", "not UTF-8 text") from None
    if text.lstrip().startswith(("{", "[")):
        return _import_json(path, text, options)
    from sitegen.importers import seed_page

    return seed_page.parse_page(text, path, options)


def _import_json(path: Path, text: str, options: ImportOptions) -> Bundle | SweepFile:
    """Dispatch JSON by its shape: a bundle, llm-inference-bench output, or a sweep tool's result."""
    from sitegen.loader import decode_bundle_file, read_json

    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        # Python's json reads the NaN and Infinity that Python tools write; what it cannot
        # read is worded by the reader `sitegen build` uses, so both commands say the same.
        data = read_json(path, text.encode())
    from sitegen.importers import llm_inference_bench

    for sweep_format in sweep_formats():
        if sweep_format.looks_like(data):
            return sweep_format.read(data, path)
    if llm_inference_bench.looks_like(data):
        return llm_inference_bench.convert(data, path, options)
    if isinstance(data, dict) and "schema" in data and "decode" in data:
        bundle = apply_options(decode_bundle_file(path, text.encode()), options)
        return validated(msgspec.structs.replace(bundle, id=options.id or bundle.id), path)
    raise InputError(path, None, "unknown JSON format: not a speed-matrix bundle, nor output of llm-inference-bench, "
                                 "vllm bench serve, GuideLLM or AIPerf")


def bundle_id_from(options: ImportOptions, *parts: str | None) -> str:
    """The id for an imported bundle: the --id option, else a slug of the parts."""
    from runner.bundle.ids import run_id

    return options.id or run_id(*parts)


def validated(bundle: Bundle, path: Path) -> Bundle:
    """The bundle after the same checks as one loaded from disk (slug id, ranges, unique cells)."""
    from runner.bundle.schema import encode_bundle
    from sitegen.loader import decode_bundle_file

    return decode_bundle_file(path, encode_bundle(bundle))
