"""The kept search for duplicates: after runs change, what it finds around them is what the whole search finds."""

from __future__ import annotations

import random

import pytest

from sitegen.check.duplicate_index import DuplicateIndex, _around_changes, searched
from sitegen.check.duplicates import MAX_HOLDERS, Claim, duplicate_problems, measurements, packed, problems_of


def _claims(rng: random.Random, count: int, pool: int) -> dict[str, Claim]:
    """Runs drawing their measurements from a small pool, so that many share some and a few are copies."""
    return {f"r{i:03}.json": _claim(rng, f"r{i:03}.json", pool) for i in range(count)}


def _claim(rng: random.Random, name: str, pool: int) -> Claim:
    return Claim(f"runs/{name}", f"id-{rng.randrange(10**6)}", packed(rng.sample(range(pool), rng.randint(0, 6))))


def _change(rng: random.Random, runs: dict[str, Claim], pool: int, version: int) -> None:
    """One change a site sees: a run resubmitted, copied under another id, added or removed."""
    what = rng.choice(("resubmit", "copy", "add", "remove"))
    name = rng.choice(sorted(runs))
    if what == "resubmit":
        runs[name] = _claim(rng, name, pool)
    elif what == "copy":
        source = runs[rng.choice(sorted(runs))]
        runs[name] = Claim(f"runs/{name}", f"copy-{version}", source.digests)
    elif what == "add":
        added = f"r{rng.randrange(1000):03}-{version}.json"
        runs[added] = _claim(rng, added, pool)
    elif len(runs) > 2:
        del runs[name]


def _named(runs: dict[str, Claim]) -> tuple[list[Claim], list[tuple[str, str]]]:
    """The claims in file-name order, and each file's name and fingerprint (its contents, as a bundle's)."""
    names = sorted(runs)
    return [runs[n] for n in names], [(n, f"{runs[n].run_id}:{list(measurements(runs[n]))}") for n in names]


@pytest.mark.parametrize("seed", range(6))
def test_the_kept_search_finds_what_the_whole_search_finds(seed: int) -> None:
    rng = random.Random(seed)
    pool = 40 if seed % 2 else 400  # crowded: many shared measurements; sparse: few
    runs = _claims(rng, 30, pool)
    claims, named = _named(runs)
    index = searched(claims, named, None)
    kept_used = 0
    for version in range(60):
        for _ in range(rng.randint(1, 2)):
            _change(rng, runs, pool, version)
        claims, named = _named(runs)
        kept_used += _around_changes(claims, named, index) is not None
        index = searched(claims, named, index)
        whole = searched(claims, named, None)
        assert (index.holders, index.copies) == (whole.holders, whole.copies), f"after change {version}"
        assert problems_of(claims, index.copies) == duplicate_problems(claims)
    assert kept_used > 30, "the kept search was taken after most changes, not the whole search every time"


def test_a_measurement_crossing_max_holders_searches_every_run_again() -> None:
    common = 1
    crowd = [Claim(f"runs/r{i:03}.json", f"r{i}", packed([common, 100 + i])) for i in range(MAX_HOLDERS)]
    named = [(f"r{i:03}.json", "v0") for i in range(MAX_HOLDERS)]
    index = searched(crowd, named, None)
    assert len(index.copies) == MAX_HOLDERS, "one of two measurements shared by 64 files: each one a copy of the others"
    more = [*crowd, Claim("runs/z.json", "z", packed([common, 999]))]
    assert _around_changes(more, [*named, ("z.json", "v0")], index) is None, "a 65th holder changes what the others share"
    again = searched(more, [*named, ("z.json", "v0")], index)
    assert again.copies == {} and again == DuplicateIndex(again.runs, searched(more, again.runs, None).holders, {})


def test_a_measurement_falling_to_max_holders_searches_every_run_again() -> None:
    crowd = [Claim(f"runs/r{i:03}.json", f"r{i}", packed([1, 100 + i])) for i in range(MAX_HOLDERS + 1)]
    named = [(f"r{i:03}.json", "v0") for i in range(MAX_HOLDERS + 1)]
    index = searched(crowd, named, None)
    assert index.copies == {}, "a measurement 65 files share is no evidence"
    assert _around_changes(crowd[1:], named[1:], index) is None, "one holder fewer makes it evidence for the other 64"
    assert len(searched(crowd[1:], named[1:], index).copies) == MAX_HOLDERS
