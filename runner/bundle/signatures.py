"""Signed bundles: SSH signatures (`ssh-keygen -Y`, the form git and GitHub use for commits) and SHA-256 sums.

The runner signs a finished run's bundle and its raw request records with the submitter's SSH
key (`runner measure --sign KEY`): `<file>.sig` beside each, in the namespace NAMESPACE, and
`<id>.sha256` listing both files' sums (`sha256sum -c` reads it). sitegen verifies them against
`content/allowed_signers`, the file `ssh-keygen -Y verify` takes, which names who may sign.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Literal

import msgspec

NAMESPACE = "speed-matrix"
_TIMEOUT_S = 30.0

Verdict = Literal["signed", "modified", "unsigned", "unknown signer"]


class SigningError(Exception):
    """A file could not be signed; str() is the one-line reason."""


class Signature(msgspec.Struct, frozen=True):
    """What a file's signature says: its verdict, and who signed it where that is known."""

    verdict: Verdict
    signer: str | None = None


def signature_path(path: Path) -> Path:
    """Where a file's signature lives: beside it, as `<name>.sig`."""
    return path.with_name(path.name + ".sig")


def sums_path(out: Path) -> Path:
    """Where the SHA-256 sums of the run whose bundle is at `out` live: `<id>.sha256`."""
    return out.with_name(out.name.removesuffix(".json") + ".sha256")


def _ssh_keygen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("ssh-keygen") is None:
        raise SigningError("ssh-keygen not found: signing and verifying need OpenSSH's ssh-keygen")
    return subprocess.run(["ssh-keygen", *args], input=stdin, capture_output=True, timeout=_TIMEOUT_S)


def sign(files: list[Path], key: Path) -> None:
    """Sign each file with the private `key` (its `.sig` beside it), then write the run's SHA-256 sums."""
    for path in files:
        signature_path(path).unlink(missing_ok=True)
        done = _ssh_keygen("-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE, str(path))
        if done.returncode:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise SigningError(f"cannot sign {path.name} with {key}: {reason[-1] if reason else 'ssh-keygen failed'}")
    lines = [f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n" for path in files]
    sums_path(files[0]).write_text("".join(lines))


def verify(path: Path, allowed_signers: Path | None) -> Signature:
    """Whether `path` is signed by someone `allowed_signers` names, and unchanged since.

    "unsigned": no signature beside it; "unknown signer": signed, but by no one the file allows
    (or no allowed_signers file); "modified": the signer is allowed but the file changed since.
    """
    signature = signature_path(path)
    if not signature.is_file():
        return Signature(verdict="unsigned")
    if allowed_signers is None or not allowed_signers.is_file():
        return Signature(verdict="unknown signer")
    found = _ssh_keygen("-Y", "find-principals", "-s", str(signature), "-f", str(allowed_signers))
    principals = found.stdout.decode("utf-8", "replace").split()
    if found.returncode or not principals:
        return Signature(verdict="unknown signer")
    data = path.read_bytes()
    for principal in principals:
        done = _ssh_keygen("-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE,
                           "-s", str(signature), stdin=data)
        if done.returncode == 0:
            return Signature(verdict="signed", signer=principal)
    return Signature(verdict="modified", signer=principals[0])
