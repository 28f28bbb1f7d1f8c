"""Signatures: whether a bundle and its raw records are signed by someone allowed, and unchanged since.

runner/bundle/signatures.py verifies each file against an allowed_signers file (the caller's, or
the nearest one in the folders above the bundle: `content/allowed_signers` for
`content/runs/<id>.json`). A file changed after its allowed signer signed it, or whose SHA-256
no longer matches the run's sums file (`<id>.sha256`, checked even where ssh-keygen is missing),
is a problem: the bundle is inconsistent.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import msgspec

from runner.bundle.records import records_path
from runner.bundle.signatures import SigningError, signature_path, sums_path, verify
from sitegen.check.verdict import Problem, SignatureState

ALLOWED_SIGNERS = "allowed_signers"


class Signatures(msgspec.Struct, kw_only=True):
    """How the bundle's and its records' signatures were judged, and the problems found."""

    bundle: SignatureState
    signer: str | None = None
    records: SignatureState = "absent"
    problems: list[Problem] = []


def nearest_allowed_signers(path: Path) -> Path | None:
    """The allowed_signers file in the bundle's folder or the nearest folder above it, if any."""
    try:
        folders = path.resolve().parents
    except (OSError, RuntimeError):
        return None
    return next((folder / ALLOWED_SIGNERS for folder in folders if (folder / ALLOWED_SIGNERS).is_file()), None)


def check_signatures(path: Path, allowed: Path | None) -> Signatures:
    """Verify the bundle at `path` and the records beside it against `allowed` (None: the nearest allowed_signers)."""
    records = records_path(path)
    signed = signature_path(path).is_file() or signature_path(records).is_file()
    allowed = allowed or (nearest_allowed_signers(path) if signed else None)  # an unsigned run needs none
    found = Signatures(bundle="unsigned")
    found.bundle, found.signer = _verify(path, "$", allowed, found.problems)
    if records.is_file():  # not a FIFO: verifying reads the file whole
        found.records, _ = _verify(records, None, allowed, found.problems)
    listed = _sums(path)
    found.problems += [listed[file] for file in listed if file not in {p.file for p in found.problems}]
    return found


def _verify(path: Path, where: str | None, allowed: Path | None, problems: list[Problem]) -> tuple[SignatureState, str | None]:
    """The file's signature state and signer; a file modified since its allowed signer signed it adds a problem."""
    try:
        found = verify(path, allowed)
    except (SigningError, subprocess.SubprocessError, OSError):
        return "not checked", None
    if found.verdict == "modified":
        problems.append(Problem(str(path), where, f"modified after signing: the signature by {found.signer} no longer matches"))
    return found.verdict, found.signer


def _sums(path: Path) -> dict[str, Problem]:
    """By file, a problem for the bundle or records file whose bytes no longer match the run's SHA-256 sums."""
    sums = sums_path(path)
    if not sums.is_file():
        return {}
    try:
        lines = sums.read_text("utf-8", "replace").splitlines()
    except OSError as exc:
        return {str(sums): Problem(str(sums), None, f"cannot read: {exc.strerror or exc}")}
    problems = {}
    for line in lines:
        digest, _, name = line.partition("  ")
        for file, where in ((path, "$"), (records_path(path), None)):
            if name.strip() == file.name and file.is_file() and _sha256(file) != digest.strip().lower():
                message = f"modified after signing: its SHA-256 differs from the one in {sums.name}"
                problems[str(file)] = Problem(str(file), where, message)
    return problems


def _sha256(path: Path) -> str:
    """The file's SHA-256 in hex, read in chunks; empty when it cannot be read."""
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return ""
