"""The search for duplicates kept between builds: after a few runs changed, only their measurements are
looked up among the others, and what the unchanged runs share is taken as the last search found it.

The result is the one duplicates.py's whole search gives (a test compares them after random changes).
Where a change could alter what two unchanged runs share (a measurement crossing MAX_HOLDERS), or many
runs changed, the whole search runs again.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Sequence

import msgspec

from sitegen.check.duplicates import (
    DIGEST_BYTES,
    DIGEST_TYPE,
    Claim,
    Copies,
    Holders,
    all_copies,
    copies_of,
    counted,
    holders_of,
    measurements,
    packed,
)

# Beyond this share of the runs changed (or this many, in a small site), the whole search is as quick.
MOST_CHANGED_SHARE = 0.01
MOST_CHANGED = 16


class DuplicateIndex(msgspec.Struct, array_like=True):
    """What one search found among `runs` ((file name, fingerprint) of each claim, in order): the
    measurements several runs hold, and the copies, both by position in `runs`."""

    runs: list[tuple[str, str]]
    holders: Holders
    copies: Copies


def searched(claims: Sequence[Claim], runs: list[tuple[str, str]], kept: DuplicateIndex | None) -> DuplicateIndex:
    """The index of `claims` (named by `runs`), from `kept` (the last search's) where only a few runs changed."""
    return (_around_changes(claims, runs, kept) if kept is not None else None) or _whole(claims, runs)


def _whole(claims: Sequence[Claim], runs: list[tuple[str, str]]) -> DuplicateIndex:
    holders = holders_of(claims)
    return DuplicateIndex(runs, holders, all_copies(claims, holders))


def _around_changes(claims: Sequence[Claim], runs: list[tuple[str, str]], kept: DuplicateIndex) -> DuplicateIndex | None:
    """The index found by looking up only the changed runs' measurements; None where the whole search is needed."""
    now = {name: index for index, (name, _) in enumerate(runs)}
    moved = [now[name] if name in now and runs[now[name]] == (name, fingerprint) else None for name, fingerprint in kept.runs]
    unchanged = {index for index in moved if index is not None}
    changed = [index for index in range(len(runs)) if index not in unchanged]
    if len(changed) + moved.count(None) > max(MOST_CHANGED, MOST_CHANGED_SHARE * len(runs)):
        return None
    looked_up = set().union(*(measurements(claims[index]) for index in changed))
    found = _holding(claims, changed, looked_up)
    holders: Holders = {}
    gone = {owner for owner, index in enumerate(moved) if index is None}
    in_place = all(index is None or index == owner for owner, index in enumerate(moved))
    for digest, group in kept.holders.items():
        if digest in looked_up:
            continue
        if in_place and gone.isdisjoint(group):
            holders[digest] = group  # no run added or removed before its holders, none of them changed
            continue
        still = sorted(moved[owner] for owner in group if moved[owner] is not None)
        if len(still) != len(group) and len(still) > 1 and counted(len(still)) != counted(len(group)):
            return None  # a measurement two unchanged runs share crossed MAX_HOLDERS: their copies may differ
        if len(still) > 1:
            holders[digest] = still
    for digest, group in found.items():
        before = len(kept.holders.get(digest, ()))
        if sum(owner in unchanged for owner in group) > 1 and counted(before) != counted(len(group)):
            return None
        if len(group) > 1:
            holders[digest] = group
    copies: Copies = defaultdict(dict)
    for index, others in kept.copies.items():
        if moved[index] is not None:
            copies[moved[index]].update((moved[other], count) for other, count in others.items() if moved[other] is not None)
    for index in changed:
        for other, count in copies_of(index, claims, holders).items():
            copies[index][other] = copies[other][index] = count
    return DuplicateIndex(runs, holders, {index: others for index, others in copies.items() if others})


def _holding(claims: Sequence[Claim], changed: list[int], looked_up: set[int]) -> Holders:
    """The holders of each digest looked up: the changed claims, by their own digests, and the others,
    found by searching their packed digests at once (the few shared ones then located in the bytes)."""
    found: Holders = defaultdict(list)
    for index in changed:
        for digest in measurements(claims[index]):
            found[digest].append(index)
    is_changed = set(changed)
    others = [index for index in range(len(claims)) if index not in is_changed]
    blob = b"".join(claims[index].digests for index in others)
    starts = list(itertools.accumulate((len(claims[index].digests) for index in others), initial=0))
    for digest in looked_up.intersection(memoryview(blob).cast(DIGEST_TYPE)):
        pattern = packed([digest])
        at = blob.find(pattern)
        while at >= 0:
            if at % DIGEST_BYTES == 0:
                found[digest].append(others[bisect.bisect_right(starts, at) - 1])
            at = blob.find(pattern, at + 1)
    return {digest: sorted(group) for digest, group in found.items()}
