"""Duplicates: one run under two ids (found by the digests of its measurements), and one id in two files.

Each measured decode cell and prefill point is digested whole, with every figure it holds: no two
measurements of a server give the same figures, but pages round them, so a cell or two may match
by chance. Two bundles under different ids hold the same run when at least half of the smaller
one's measurements appear in the other: a copy with a few figures changed is still found.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

import msgspec

from runner.bundle.schema import Bundle
from sitegen.check.verdict import Problem, Verdict

_encoder = msgspec.json.Encoder(order="deterministic")
# Hex digits kept of each SHA-256: 64 bits tell a site's measurements apart, and a build keeps them per run.
DIGEST_CHARS = 16


def digests(bundle: Bundle) -> list[str]:
    """A digest of each decode cell and prefill point that holds a figure."""
    cells = [cell for cell in bundle.decode if cell.total_tok_s is not None]
    measured = [*cells, *(point for point in bundle.prefill if point.prompt_tok_s is not None)]
    return sorted({hashlib.sha256(_encoder.encode(item)).hexdigest()[:DIGEST_CHARS] for item in measured})


def settle(verdicts: list[Verdict]) -> list[Verdict]:
    """Add to each verdict the problems only the whole set shows: its id already used by an earlier file,
    or its measurements also in another file under another id (said on both)."""
    first_with: dict[str, Verdict] = {}
    for verdict in verdicts:
        if verdict.run_id is None:
            continue
        earlier = first_with.setdefault(verdict.run_id, verdict)
        if earlier is not verdict:
            verdict.problems.append(Problem(verdict.path, "$.id", f"id {verdict.run_id!r} is already used by {earlier.path}"))
    holders: dict[str, list[int]] = defaultdict(list)
    for index, verdict in enumerate(verdicts):
        for digest in verdict.digests:
            holders[digest].append(index)
    for index, verdict in enumerate(verdicts):
        shared = Counter(other for digest in verdict.digests for other in holders[digest] if other != index)
        for other, count in sorted(shared.items()):
            copy = verdicts[other]
            if copy.run_id != verdict.run_id and 2 * count >= min(len(verdict.digests), len(copy.digests)):
                verdict.problems.append(Problem(verdict.path, "$.id", f"{count} of its measurements are also in {copy.path} "
                                                                      f"(id {copy.run_id!r}): one run submitted twice"))
    return verdicts
