"""`sitegen import`: many source files in, one bundle file each out, nothing half-written."""

from __future__ import annotations

from pathlib import Path

from runner.schema import encode_bundle
from sitegen.atomic import write_atomic
from sitegen.errors import InputError, InputErrors
from sitegen.importers import import_file
from sitegen.importers.options import ImportOptions
from sitegen.loader import scrub


def import_files(files: list[Path], out: Path, options: ImportOptions, replace: bool = False) -> tuple[list[Path], list[InputError]]:
    """Import each file; a bad file is reported and skipped, the others are written.

    An existing bundle of the same id is kept unless `replace` is set, so a second
    import cannot silently overwrite a measured run.
    """
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
        if target.exists() and not replace:
            errors.append(InputError(path, None, f"{target} exists already; pass --replace to overwrite it, or --id to import under another id"))
            continue
        try:
            out.mkdir(parents=True, exist_ok=True)
            write_atomic(target, encode_bundle(bundle))
        except (OSError, RuntimeError) as exc:  # --out is a file, a symlink loop, read-only, full
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            errors.append(InputError(out, None, f"cannot write {target.name} here: {reason}"))
            continue
        written.append(target)
    return written, errors
