"""Duplicates: one run under two ids (found by the digests of its measurements), and one id in two files.

Each measured decode cell and prefill point is digested whole, with every figure it holds: no two
measurements of a server give the same figures, but pages round them, so a cell or two may match
by chance. Two bundles under different ids hold the same run when at least half of the smaller
one's measurements appear in the other: a copy with a few figures changed is still found.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence

import msgspec

from runner.bundle.schema import Bundle
from sitegen.check.verdict import Problem, Verdict

_encoder = msgspec.json.Encoder(order="deterministic")
# Bytes kept of each SHA-256, as an integer: 64 bits tell a site's measurements apart, a build keeps
# them per run, and integers are counted across every run far faster than strings.
DIGEST_BYTES = 8
# A measurement held by more files than this is one many runs share (a degenerate cell), not a copy of
# one run: it says nothing of any pair of them, and counting its pairs would cost the square of its holders.
MAX_HOLDERS = 64


def digests(bundle: Bundle) -> list[int]:
    """A digest of each decode cell and prefill point that holds a figure."""
    cells = [cell for cell in bundle.decode if cell.total_tok_s is not None]
    measured = [*cells, *(point for point in bundle.prefill if point.prompt_tok_s is not None)]
    return sorted({int.from_bytes(hashlib.sha256(_encoder.encode(item)).digest()[:DIGEST_BYTES]) for item in measured})


class Claim(msgspec.Struct):
    """What finding duplicates needs of a verdict (its fields of the same names): where the run was
    read, its id and its measurements' digests. A build decodes only these from its kept verdicts."""

    path: str
    run_id: str | None = None
    digests: list[int] = []


def duplicate_problems(claims: Sequence[Claim | Verdict]) -> dict[int, list[Problem]]:
    """The problems only the whole set shows, by position: an id already used by an earlier file, or
    measurements also in another file under another id (said on both)."""
    found: dict[int, list[Problem]] = defaultdict(list)
    first_with: dict[str, int] = {}
    for index, claim in enumerate(claims):
        if claim.run_id is None:
            continue
        earlier = first_with.setdefault(claim.run_id, index)
        if earlier != index:
            found[index].append(Problem(claim.path, "$.id", f"id {claim.run_id!r} is already used by {claims[earlier].path}"))
    # Most measurements are in one file only: where every one is, a set says so (in C) and nothing
    # more is done; else each file counts, by file, the holders of its measurements that others hold.
    every = list(itertools.chain.from_iterable(claim.digests for claim in claims))
    if len(set(every)) == len(every):
        return dict(found)
    repeated = {digest for digest, count in Counter(every).items() if 1 < count <= MAX_HOLDERS}
    owners = itertools.chain.from_iterable(itertools.repeat(index, len(claim.digests)) for index, claim in enumerate(claims))
    holders: dict[int, list[int]] = defaultdict(list)
    for digest, owner in itertools.compress(zip(every, owners), map(repeated.__contains__, every)):
        holders[digest].append(owner)
    for index, claim in enumerate(claims):
        shared: Counter[int] = Counter()
        for group in filter(None, map(holders.get, claim.digests)):
            shared.update(group)  # counted in C, where a Counter of pairs over every file took seconds and a GB at scale
        for other in sorted(shared):
            copy, count = claims[other], shared[other]
            if other != index and copy.run_id != claim.run_id and 2 * count >= min(len(claim.digests), len(copy.digests)):
                found[index].append(Problem(claim.path, "$.id", f"{count} of its measurements are also in {copy.path} "
                                                                f"(id {copy.run_id!r}): one run submitted twice"))
    return dict(found)


def settle(verdicts: list[Verdict]) -> list[Verdict]:
    """Add to each verdict the problems only the whole set shows (duplicate_problems)."""
    for index, problems in duplicate_problems(verdicts).items():
        verdicts[index].problems.extend(problems)
    return verdicts
