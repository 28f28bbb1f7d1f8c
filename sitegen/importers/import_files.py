"""`sitegen import`: source files in, bundle files out, nothing half-written.

Pages, bundles and llm-inference-bench files make one bundle each; the result files of one
benchmark sweep (vllm bench serve, GuideLLM, AIPerf; folders of them too) make one bundle
together: one per tool and model, or exactly one under --id. The per-request records those
files hold go beside their bundle (source_requests.py), written with it or not at all.
"""

from __future__ import annotations

import os
from pathlib import Path

from runner.bundle.files import write_atomic, write_bundle
from runner.bundle.records import records_path
from runner.bundle.schema import Bundle
from runner.bundle.signatures import signature_path, sums_path
from sitegen.errors import InputError, InputErrors
from sitegen.importers.options import ImportOptions
from sitegen.importers.registry import read_source, result_files
from sitegen.importers.source_requests import encode_source_requests, source_requests_path
from sitegen.importers.sweep import SweepFile, placed, sweep_bundle

Imported = tuple[Path, Bundle, bytes | None]  # the source file, its bundle, and the bundle's source requests (gzip'd)


def import_files(files: list[Path], out: Path, options: ImportOptions, replace: bool = False) -> tuple[list[Path], list[InputError]]:
    """Import the files; a bad file is reported and skipped, the others are written.

    A sweep is written only when every file given is good, since a sweep missing a file
    would publish a partial matrix. An existing bundle of the same id is kept unless
    `replace` is set, so a second import cannot silently overwrite a measured run.
    """
    errors: list[InputError] = []
    bundles: list[Imported] = []
    sweep: list[SweepFile] = []
    for path in _sources(files, errors):
        try:
            source = read_source(path, options)
        except InputError as exc:
            errors.append(exc)
            continue
        except InputErrors as exc:
            errors.extend(exc.errors)
            continue
        if isinstance(source, SweepFile):
            sweep.append(source)
        else:
            bundles.append((path, source, None))
    if sweep and not errors:
        # Under one --id every file must be of the one sweep; without, each tool and model is a run of its own.
        for files_of_one_run in [sweep] if options.id else _runs(sweep):
            try:
                bundle = sweep_bundle(files_of_one_run, options)
                requests = encode_source_requests([(found.cell, found.level.requests) for found in placed(files_of_one_run)
                                                   if found.level.requests is not None])
                bundles.append((files_of_one_run[0].path, bundle, requests))
            except InputError as exc:
                errors.append(exc)
    if options.id and len(bundles) + (1 if sweep and errors else 0) > 1:
        return [], [InputError("--id", None, f"names one bundle, but these files make {len(bundles)}: "
                                             "several files make one bundle only when they are results of one sweep")]
    return _write(bundles, out, replace, errors), errors


def _runs(sweep: list[SweepFile]) -> list[list[SweepFile]]:
    """The sweep files grouped by tool and model, in the order given."""
    runs: dict[tuple[str, str], list[SweepFile]] = {}
    for file in sweep:
        runs.setdefault((file.tool, file.model), []).append(file)
    return list(runs.values())


def _sources(files: list[Path], errors: list[InputError]) -> list[Path]:
    """The files given, with each folder replaced by the result files found under it."""
    sources: list[Path] = []
    for path in files:
        if not path.is_dir():
            sources.append(path)
            continue
        try:
            sources.extend(result_files(path))
        except InputError as exc:
            errors.append(exc)
    return sources


def _write(bundles: list[Imported], out: Path, replace: bool, errors: list[InputError]) -> list[Path]:
    """Write each bundle atomically as OUT/<id>.json; a bundle whose file exists is an error unless replacing."""
    written: list[Path] = []
    for path, bundle, requests in bundles:
        target = out / f"{bundle.id}.json"
        if target.exists() and not replace:
            errors.append(InputError(path, None, f"{target} exists already; pass --replace to overwrite it, or --id to import under another id"))
            continue
        try:
            out.mkdir(parents=True, exist_ok=True)
            _write_run(target, bundle, requests)
        except (OSError, RuntimeError) as exc:  # --out is a file, a symlink loop, read-only, full
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            errors.append(InputError(out, None, f"cannot write {target.name} here: {reason}"))
            continue
        written.append(target)
    return written


def _write_run(target: Path, bundle: Bundle, requests: bytes | None) -> None:
    """The bundle and its source requests, both or neither; what a replaced bundle had beside it goes.

    The requests are staged beside the bundle first, and take their place only once the bundle
    has; the records, signatures and sums of a bundle it replaces describe another run.
    """
    kept = source_requests_path(target)
    staged = kept.with_name(f".{kept.name}.staged")
    if requests is not None:
        write_atomic(staged, requests)
    try:
        write_bundle(target, bundle)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    stale = [records_path(target), signature_path(target), signature_path(records_path(target)), sums_path(target),
             signature_path(kept)] + ([kept] if requests is None else [])
    for path in stale:
        path.unlink(missing_ok=True)
    if requests is not None:
        os.replace(staged, kept)
