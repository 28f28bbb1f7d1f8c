"""Duplicates: one run under two ids (found by the digests of its measurements), and one id in two files.

Each measured decode cell and prefill point is digested whole, with every figure it holds: no two
measurements of a server give the same figures, but pages round them, so a cell or two may match
by chance. Two bundles under different ids hold the same run when at least half of the smaller
one's measurements appear in the other: a copy with a few figures changed is still found.
"""

from __future__ import annotations

import array
import hashlib
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import msgspec

from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint
from sitegen.check.verdict import Problem, Verdict

# Measurements are digested as msgpack, and as JSON in a bundle holding an integer beyond msgpack's 64 bits.
_encoder = msgspec.msgpack.Encoder(order="deterministic")
_wide_encoder = msgspec.json.Encoder(order="deterministic")
# Bytes kept of each SHA-256, packed as machine integers: 64 bits tell a site's measurements apart, a build
# keeps them per run, and a run's packed digests decode as one bytes object and are counted as integers in C.
DIGEST_BYTES = 8
DIGEST_TYPE = "Q"  # the array module's code for 8-byte unsigned integers
# A measurement held by more files than this is one many runs share (a degenerate cell), not a copy of
# one run: it says nothing of any pair of them, and counting its pairs would cost the square of its holders.
MAX_HOLDERS = 64


def digests(bundle: Bundle) -> bytes:
    """A digest of each decode cell and prefill point that holds a figure, packed."""
    measured: list[DecodeCell | PrefillPoint] = [cell for cell in bundle.decode if cell.total_tok_s is not None]
    measured += [point for point in bundle.prefill if point.prompt_tok_s is not None]
    try:
        encoded = list(map(_encoder.encode, measured))
    except OverflowError:
        encoded = list(map(_wide_encoder.encode, measured))
    prefixes = b"".join([digest.digest()[:DIGEST_BYTES] for digest in map(hashlib.sha256, encoded)])
    return packed(set(array.array(DIGEST_TYPE, prefixes)))  # read as integers in C


def packed(values: Iterable[int]) -> bytes:
    """Digests as a Claim holds them: sorted, packed."""
    return array.array(DIGEST_TYPE, sorted(values)).tobytes()


def measurements(claim: Claim | Verdict) -> memoryview:
    """A claim's digests, as integers."""
    return memoryview(claim.digests).cast(DIGEST_TYPE)


def held(claim: Claim | Verdict) -> int:
    """How many measurements a claim holds."""
    return len(claim.digests) // DIGEST_BYTES


class Claim(msgspec.Struct):
    """What finding duplicates needs of a verdict (its fields of the same names): where the run was
    read, its id and its measurements' digests. A build decodes only these from its kept verdicts."""

    path: str
    run_id: str | None = None
    digests: bytes = b""


# Each digest more than one claim holds, with the positions of its holders in order.
Holders = dict[int, list[int]]
# For a claim's position, the positions of the claims holding a copy of its run, with how many measurements they share.
Copies = dict[int, dict[int, int]]


def counted(holders: int) -> bool:
    """Whether a measurement held by this many files is evidence of a copy (MAX_HOLDERS)."""
    return 1 < holders <= MAX_HOLDERS


def holders_of(claims: Sequence[Claim | Verdict]) -> Holders:
    """Each digest more than one claim holds, with its holders' positions."""
    # Most measurements are in one file only: where every one is, a set says so (in C) and nothing more is done.
    every = memoryview(b"".join(claim.digests for claim in claims)).cast(DIGEST_TYPE)
    if len(set(every)) == len(every):
        return {}
    repeated = {digest for digest, count in Counter(every).items() if count > 1}
    owners = itertools.chain.from_iterable(itertools.repeat(index, held(claim)) for index, claim in enumerate(claims))
    holders: Holders = defaultdict(list)
    for digest, owner in itertools.compress(zip(every, owners), map(repeated.__contains__, every)):
        holders[digest].append(owner)
    return dict(holders)


def copies_of(index: int, claims: Sequence[Claim | Verdict], holders: Holders) -> dict[int, int]:
    """The claims that hold a copy of claim `index`'s run (another id, and at least half of the smaller
    one's measurements in common), with how many measurements each shares with it."""
    claim = claims[index]
    shared: Counter[int] = Counter()
    for group in filter(None, map(holders.get, measurements(claim))):
        if counted(len(group)):
            shared.update(group)  # counted in C, where a Counter of pairs over every file took seconds and a GB at scale
    return {other: count for other, count in shared.items()
            if other != index and claims[other].run_id != claim.run_id and 2 * count >= min(held(claim), held(claims[other]))}


def all_copies(claims: Sequence[Claim | Verdict], holders: Holders) -> Copies:
    """copies_of for every claim that holds a measurement another one holds."""
    holding = sorted({owner for group in holders.values() if counted(len(group)) for owner in group})
    return {index: found for index in holding if (found := copies_of(index, claims, holders))}


def problems_of(claims: Sequence[Claim | Verdict], copies: Copies) -> dict[int, list[Problem]]:
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
    for index in sorted(copies):
        for other, count in sorted(copies[index].items()):
            copy = claims[other]
            found[index].append(Problem(claims[index].path, "$.id", f"{count} of its measurements are also in {copy.path} "
                                                                    f"(id {copy.run_id!r}): one run submitted twice"))
    return dict(found)


def duplicate_problems(claims: Sequence[Claim | Verdict]) -> dict[int, list[Problem]]:
    """problems_of the claims, every one searched."""
    return problems_of(claims, all_copies(claims, holders_of(claims)))


def settle(verdicts: list[Verdict]) -> list[Verdict]:
    """Add to each verdict the problems only the whole set shows (duplicate_problems)."""
    for index, problems in duplicate_problems(verdicts).items():
        verdicts[index].problems.extend(problems)
    return verdicts
