"""Other tools' per-request records, kept beside the bundle imported from their results.

AIPerf writes each request's record to `profile_export.jsonl` beside its summary, `vllm bench
serve --save-detailed` writes per-request arrays into its result file, and GuideLLM keeps each
benchmark's requests (a sample, its size set by `--sample-requests`) in its report. An import
keeps them all in one file beside the bundle, `<id>.source-requests.jsonl.gz`: gzip-compressed
JSON lines, as the runner keeps its own records (`<id>.requests.jsonl.gz`), so both are read the
same way (zcat, jq, pandas) and stay small. Each line is one `SourceRequest`: the bundle's cell
the request belongs to, the file it came from, and the tool's own record as written, with any
secret in it (a request's authorization header, say) redacted.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec

from runner.bundle.redact import redact_json
from sitegen.errors import InputError

SUFFIX = ".source-requests.jsonl.gz"
# What one file's records may hold: far above what a benchmark writes per level (AIPerf writes
# some 3 KB a request), so that a hostile file cannot fill memory or disk.
RECORDS_MAX_BYTES = 64 * 1024 * 1024
_object = msgspec.json.Decoder(dict)
_encoder = msgspec.json.Encoder()


class ToolRecords(msgspec.Struct, frozen=True):
    """One file's per-request records, each the JSON object its tool wrote for one request (secrets redacted)."""

    file: Path
    records: list[msgspec.Raw]


class SourceRequest(msgspec.Struct, kw_only=True, frozen=True):
    """One line of the file: a request as another tool recorded it, tagged with its cell in the bundle."""

    context: int  # the cell's context, as the bundle's decode cell has it
    concurrency: int
    file: str  # where the record came from: the file's folder and name
    record: msgspec.Raw  # the tool's record of the request, as the tool wrote it


def source_requests_path(bundle: Path) -> Path:
    """Where the source requests of the bundle at `bundle` (`<id>.json`) live: beside it."""
    return bundle.with_name(bundle.name.removesuffix(".json") + SUFFIX)


def checked_size(size: int, file: Path, where: str | None, remedy: str) -> None:
    """Refuse a file whose per-request records, `size` bytes, are more than an import keeps, saying how to import it."""
    if size > RECORDS_MAX_BYTES:
        raise InputError(file, where, f"{size:,} bytes of per-request records, more than the {RECORDS_MAX_BYTES:,} "
                                      f"an import keeps: {remedy}")


def read_json_lines(path: Path) -> ToolRecords:
    """A JSON-lines file of one object a line (blank lines skipped), each kept as written.

    Refused whole, naming the file and line, when it is too big or a line is not a JSON object;
    the line itself is never echoed, since the file is untrusted.
    """
    remedy = "move it away to import the results without it"
    try:
        checked_size(path.stat().st_size, path, None, remedy)
        with path.open("rb") as handle:
            data = handle.read(RECORDS_MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    checked_size(len(data), path, None, remedy)  # it grew since it was measured
    records: list[msgspec.Raw] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        line = line.strip(b" \t\r")
        if not line:
            continue
        try:
            record = _object.decode(line)
        except msgspec.ValidationError:
            raise InputError(path, f"line {number}", "not a JSON object: each line holds one request's record") from None
        except (msgspec.DecodeError, RecursionError) as exc:
            raise InputError(path, f"line {number}", f"invalid JSON: {exc}") from None
        clean = _without_secrets(record, path, f"line {number}")
        records.append(msgspec.Raw(line) if clean is record else msgspec.Raw(_encoder.encode(clean)))
    return ToolRecords(path, records)


def encoded_records(objects: list[object], file: Path, where: str, remedy: str) -> ToolRecords:
    """Records a tool wrote inside its result file (parsed JSON, at `where` in `file`), each encoded as
    one line; refused as a whole, saying `remedy`, when together they are more than an import keeps."""
    records, size = [], 0
    for item in objects:
        record = _encoder.encode(_without_secrets(item, file, where))
        size += len(record)
        checked_size(size, file, where, remedy)
        records.append(msgspec.Raw(record))
    return ToolRecords(file, records)


def _without_secrets(record: object, file: Path, where: str) -> object:
    """The parsed record with every secret redacted (redact_json), or the record itself where it held none;
    one nested too deeply to walk is refused, at `where` in `file`."""
    try:
        return redact_json(record)
    except RecursionError:
        raise InputError(file, where, "nested too deeply to check for secrets") from None


def encode_source_requests(cells: list[tuple[tuple[int, int], ToolRecords]]) -> bytes | None:
    """The file's bytes: every record of each (context, concurrency) cell, in cell order; None when there are none."""
    lines = [
        _encoder.encode(SourceRequest(context=context, concurrency=concurrency, file=_named(found.file), record=record)) + b"\n"
        for (context, concurrency), found in sorted(cells, key=lambda pair: pair[0]) for record in found.records
    ]
    return gzip.compress(b"".join(lines), compresslevel=9, mtime=0) if lines else None


def _named(file: Path) -> str:
    """The file's folder and name (as text even where the name's bytes are not UTF-8): enough to find it, no more of the path."""
    name = f"{file.absolute().parent.name}/{file.name}"
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
