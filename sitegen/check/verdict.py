"""A bundle's problems and its verdict: verified, consistent or inconsistent.

- verified: no problem, the bundle and its raw request records are signed by someone the
  allowed_signers file names, unchanged since, and the records recompute every cell's figures;
- consistent: no problem, but not verified (unsigned, no records, or signed by someone unknown);
- inconsistent: at least one problem.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from runner.bundle.error_lines import located

Kind = Literal["verified", "consistent", "inconsistent"]
# How a signature was judged: runner.bundle.signatures' verdicts, "absent" for a file that is not
# there, and "not checked" where ssh-keygen could not run.
SignatureState = Literal["signed", "modified", "unsigned", "unknown signer", "absent", "not checked"]
# What the raw request records said: none beside the bundle, every window recomputed, or not.
RecordsState = Literal["absent", "recompute", "differ"]


class Problem(msgspec.Struct, frozen=True):
    """One thing wrong with a file, at a `$.field` (None: the file as a whole)."""

    file: str
    where: str | None
    message: str

    def line(self) -> str:
        """`file:$.field: message`, the form every error line takes."""
        return located(self.file, self.where, self.message)


class Verdict(msgspec.Struct, kw_only=True):
    """What checking one bundle file found; plain data, so that a build can keep it beside a bundle's other facts."""

    path: str
    problems: list[Problem] = []
    run_id: str | None = None
    # Digests of the measurements (decode cells, prefill points) that find a run submitted twice.
    digests: bytes = b""  # packed (sitegen.check.duplicates.packed)
    signature: SignatureState = "unsigned"
    signer: str | None = None
    records: RecordsState = "absent"
    records_signature: SignatureState = "absent"
    origin: str | None = None

    @property
    def kind(self) -> Kind:
        """verified, consistent or inconsistent (see the module's docstring)."""
        if self.problems:
            return "inconsistent"
        if self.signature == "signed" and self.records == "recompute" and self.records_signature == "signed":
            return "verified"
        return "consistent"

    def summary(self) -> str:
        """The verdict line: `file: verified (signed by alice@example.org; raw records recompute every cell)`."""
        return f"{self.path}: {self.kind} ({'; '.join(self._reasons())})"

    def _reasons(self) -> list[str]:
        """What the verdict rests on, in words: problems, signature, records, where the run came from."""
        reasons = [f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"] if self.problems else []
        signed = {"signed": f"signed by {self.signer}", "modified": f"modified after {self.signer} signed it",
                  "unsigned": "unsigned", "unknown signer": "signed by no one allowed_signers names",
                  "not checked": "signature not checked: ssh-keygen not found"}
        reasons.append(signed.get(self.signature, self.signature))
        reasons.append({"absent": "no raw records", "recompute": "raw records recompute every cell",
                        "differ": "raw records disagree"}[self.records])
        if self.records != "absent" and self.records_signature not in ("signed", self.signature):
            reasons.append(f"records {signed.get(self.records_signature, self.records_signature)}")
        if self.origin and self.origin.endswith(" import"):
            reasons.append(f"imported ({self.origin})")
        return reasons
