"""`sitegen check [PATHS…]`: check bundles, print one line per problem, then each bundle's verdict."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from runner.bundle.error_lines import print_error
from runner.bundle.terminal_text import printable
from sitegen.check.checker import CheckContext, check_file
from sitegen.check.discovery import Found, bundle_files
from sitegen.check.duplicates import settle
from sitegen.check.verdict import Verdict

KINDS = ("verified", "consistent", "inconsistent")


def run_check(paths: Sequence[Path], allowed_signers: Path | None) -> int:
    """Check every bundle the paths name; the exit status: 1 if any is inconsistent or a path cannot be read, else 0."""
    if allowed_signers is not None and not allowed_signers.is_file():
        kind = "a folder" if allowed_signers.is_dir() else "no such file"
        print_error(f"{allowed_signers}: cannot read the allowed signers: {kind}")
        return 1
    found = bundle_files(paths)
    context = CheckContext(allowed_signers)
    verdicts = settle([check_file(path, context) for path in found.files])
    for problem in [*found.problems, *(p for verdict in verdicts for p in verdict.problems)]:
        print_error(problem.line())
    for verdict in verdicts:
        print(printable(verdict.summary()))
    print(tally(verdicts, found))
    return 1 if found.problems or any(verdict.kind == "inconsistent" for verdict in verdicts) else 0


def tally(verdicts: list[Verdict], found: Found) -> str:
    """The last line: "3 bundles checked: 1 verified, 2 consistent; 4 other JSON files passed over"."""
    kinds = [verdict.kind for verdict in verdicts]
    line = f"{_count(len(verdicts), 'bundle')} checked"
    if kinds:
        line += ": " + ", ".join(f"{kinds.count(kind)} {kind}" for kind in KINDS if kind in kinds)
    if found.passed_over:
        line += f"; {_count(found.passed_over, 'other JSON file')} passed over"
    return line


def _count(count: int, noun: str) -> str:
    """`1 bundle`, `2 bundles`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
