"""`sitegen import`: many source files in, one bundle file each out, nothing half-written."""

from __future__ import annotations

from pathlib import Path

from runner.schema import encode_bundle
from sitegen.atomic import write_atomic
from sitegen.errors import InputError, InputErrors
from sitegen.importers import import_file
from sitegen.importers.options import ImportOptions
from sitegen.loader import scrub


def import_files(files: list[Path], out: Path, options: ImportOptions) -> tuple[list[Path], list[InputError]]:
    """Import each file; a bad file is reported and skipped, the others are written."""
    written: list[Path] = []
    errors: list[InputError] = []
    for path in files:
        try:
            bundle = scrub(import_file(path, options))
        except InputError as exc:
            errors.append(exc)
            continue
        except InputErrors as exc:
            errors.extend(exc.errors)
            continue
        target = out / f"{bundle.id}.json"
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(target, encode_bundle(bundle))
        written.append(target)
    return written, errors
