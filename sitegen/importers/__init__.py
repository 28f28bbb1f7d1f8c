"""Importers turn other formats (captured pages, other tools' JSON) into bundles.

`import_file` detects the format by content, never by file name.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from runner.schema import Bundle
from sitegen.errors import InputError
from sitegen.importers.options import ImportOptions, apply_options


def import_file(path: Path, options: ImportOptions) -> Bundle:
    """Read one file of any known format and return its bundle."""
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


def _import_json(path: Path, text: str, options: ImportOptions) -> Bundle:
    """Dispatch JSON by its shape: a bundle, or llm-inference-bench output."""
    from sitegen.loader import decode_bundle_file, read_json

    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        # Python's json reads the NaN and Infinity that Python tools write; what it cannot
        # read is worded by the reader `sitegen build` uses, so both commands say the same.
        data = read_json(path, text.encode())
    from sitegen.importers import llm_inference_bench

    if llm_inference_bench.looks_like(data):
        return llm_inference_bench.convert(data, path, options)
    if isinstance(data, dict) and "schema" in data and "decode" in data:
        bundle = apply_options(decode_bundle_file(path, text.encode()), options)
        return validated(msgspec.structs.replace(bundle, id=options.id or bundle.id), path)
    raise InputError(path, None, "unknown JSON format: neither a speed-matrix bundle nor llm-inference-bench output")


def bundle_id_from(options: ImportOptions, *parts: str | None) -> str:
    """The id for an imported bundle: the --id option, else a slug of the parts."""
    from sitegen.slug import slugify

    return options.id or slugify("-".join(p for p in parts if p))


def validated(bundle: Bundle, path: Path) -> Bundle:
    """The bundle after the same checks as one loaded from disk (slug id, ranges, unique cells)."""
    from runner.schema import encode_bundle
    from sitegen.loader import decode_bundle_file

    return decode_bundle_file(path, encode_bundle(bundle))
