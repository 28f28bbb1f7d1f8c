"""Which runs are worth comparing, and what differs between two runs (data only, no markup)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

import msgspec

from runner.bundle.launch_words import launch_words
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.figures.summary import valued_by_cell
from sitegen.slug import slugify
from sitegen.views.runview import Section, sections
from sitegen.views.serving_view import setup_fields

PARTNER_LIMIT = 3
# How many runs nearest in time, per shared model or hardware, are weighed as a run's partners.
NEIGHBOURS = 8
SAME_SETUP = "Same model, hardware and engine, measured again"
OTHER_ENGINE = "Same model and hardware, another engine or version"
OTHER_HARDWARE = "Same model on other hardware"
OTHER_MODEL = "Same hardware, another model"
# Most comparable first: a pair's reason decides its rank among a run's candidates.
REASON_RANK = (OTHER_ENGINE, SAME_SETUP, OTHER_HARDWARE, OTHER_MODEL)
_REASON_ORDER = {why: rank for rank, why in enumerate(REASON_RANK)}
_EPOCH = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)


class Dated(Protocol):
    """A run as pairing needs it: a bundle, or the build's small record of one (catalog.RunEntry)."""

    @property
    def id(self) -> str: ...

    @property
    def measured_at(self) -> dt.datetime | None: ...


R = TypeVar("R", bound=Dated)


class RatioCell(msgspec.Struct, frozen=True):
    """One cell of a comparison: b / a total tok/s where both runs have a value, else None."""

    concurrency: int
    a_tok_s: float | None
    b_tok_s: float | None
    ratio: float | None


class RatioRow(msgspec.Struct, frozen=True):
    """One context length across the union of both runs' concurrencies."""

    context_tokens: int
    cells: list[RatioCell]


def hardware_key(bundle: Bundle) -> tuple[str, int | None] | None:
    """What makes two runs' hardware the same: GPU and count; None when the GPU is unknown."""
    gpu = bundle.hardware.gpu
    return (slugify(gpu), bundle.hardware.gpu_count) if gpu else None


def engine_key(bundle: Bundle) -> tuple[str, str | None, str | None]:
    """Engine, version and quantization."""
    engine = bundle.engine
    return (engine.name, engine.version, engine.quantization)


class Keys(msgspec.Struct, frozen=True):
    """What decides whether two runs are related, computed once per run."""

    model: str
    hardware: tuple[str, int | None] | None
    engine: tuple[str, str | None, str | None]


def keys_of(bundle: Bundle) -> Keys:
    return Keys(slugify(bundle.model), hardware_key(bundle), engine_key(bundle))


def relation_of(a: Keys, b: Keys) -> str | None:
    """Why runs with these keys are worth comparing, or None when they share neither model nor hardware."""
    same_model = a.model == b.model
    same_hardware = a.hardware is not None and a.hardware == b.hardware
    if same_model and same_hardware:
        return SAME_SETUP if a.engine == b.engine else OTHER_ENGINE
    if same_model:
        return OTHER_HARDWARE
    return OTHER_MODEL if same_hardware else None


def compare_slug(a: Dated, b: Dated) -> str:
    """The file name of the comparison page of a (baseline) and b, one per pair.

    "a-vs-b" splits at its first "-vs-", so it is unique while the baseline's id neither holds
    "-vs-" nor ends in "-vs"; for one that does, "_vs_" (which ids cannot hold) joins them instead.
    """
    return f"{a.id}{'_vs_' if '-vs-' in a.id + '-' else '-vs-'}{b.id}"


def _when(run: Dated) -> tuple[dt.datetime, str]:
    """Time order: measured date (undated first), then id; the earlier of a pair is its baseline."""
    return (run.measured_at or _EPOCH, run.id)


def _candidates(keyed: list[Keys], when: list[tuple[dt.datetime, str]]) -> list[set[int]]:
    """Each run's candidate partners (by position): its NEIGHBOURS nearest in time in each group it
    belongs to (same model; same hardware; same model and hardware), so the search stays linear in runs."""
    groups: dict[tuple, list[int]] = {}
    for i, mine in enumerate(keyed):
        groups.setdefault(("model", mine.model), []).append(i)
        if mine.hardware is not None:
            groups.setdefault(("hardware", mine.hardware), []).append(i)
            groups.setdefault(("setup", mine.model, mine.hardware), []).append(i)
    found: list[set[int]] = [set() for _ in keyed]
    for members in groups.values():
        members.sort(key=when.__getitem__)
        for place, i in enumerate(members):
            found[i].update(members[max(0, place - NEIGHBOURS): place + NEIGHBOURS + 1])
    for i, mine in enumerate(found):
        mine.discard(i)
    return found


def related_pairs(runs: Iterable[R], limit: int = PARTNER_LIMIT, keys: Callable[[R], Keys] = keys_of) -> list[tuple[R, R, str]]:
    """Pairs worth a comparison page, each run in at most `limit` of them; baseline first, ordered by slug.

    A run's partners are its closest related runs: the most comparable reason first (another engine on
    the same setup, a rerun, other hardware, another model), then the nearest measurement date. `runs`
    are bundles or anything with an id, a measured_at and, through `keys`, the keys of keys_of.
    Runs are handled by position, with their keys, dates and ids looked up once: at 10,000 runs
    each weighs about 40 candidates.
    """
    runs = sorted(runs, key=lambda r: r.id)
    ids = [run.id for run in runs]
    keyed = [keys(run) for run in runs]
    when = [_when(run) for run in runs]
    micros = [(moment - _EPOCH) // _MICROSECOND for moment, _ in when]
    partners = [0] * len(runs)
    pairs: dict[str, tuple[R, R, str]] = {}
    for i, candidates in enumerate(_candidates(keyed, when)):
        mine = keyed[i]
        # (rank of the reason, seconds apart, the other's id): ids are unique, so the rest never decides.
        # The seconds are exactly timedelta.total_seconds(): microseconds over a million, correctly rounded.
        found = sorted((_REASON_ORDER[why], abs(micros[i] - micros[j]) / 1_000_000, ids[j], j, why)
                       for j in candidates if (why := relation_of(mine, keyed[j])))
        for _, _, _, j, why in found:
            if partners[i] >= limit:
                break
            a, b = (i, j) if when[i] <= when[j] else (j, i)
            slug = compare_slug(runs[a], runs[b])
            if slug in pairs or partners[j] >= limit:
                continue
            pairs[slug] = (runs[a], runs[b], why)
            partners[a] += 1
            partners[b] += 1
    return [pairs[slug] for slug in sorted(pairs)]


ByCell = dict[tuple[int, int], DecodeCell]
Valued = tuple[ByCell, ByCell]  # two runs' valued_by_cell: a comparison's views of them make them once


def totals(valued: ByCell) -> dict[tuple[int, int], float]:
    """Total tok/s of a run's cells with a value (valued_by_cell), by (context, concurrency)."""
    return {key: c.total_tok_s for key, c in valued.items()}


def ratio_cell(concurrency: int, a_tok_s: float | None, b_tok_s: float | None) -> RatioCell:
    """A comparison cell; the ratio is None when either value is missing or a's is zero."""
    ratio = b_tok_s / a_tok_s if a_tok_s and b_tok_s is not None else None
    return RatioCell(concurrency, a_tok_s, b_tok_s, ratio)


def ratio_matrix(a: Bundle, b: Bundle, valued: Valued | None = None) -> list[RatioRow]:
    """Cell-by-cell b / a total tok/s, over the contexts and concurrencies where both runs
    have a value in at least one cell: rows and columns of nothing but "—" are left out.
    `valued`: the runs' valued_by_cell, where the caller has them (they are made otherwise)."""
    ta, tb = (totals(v) for v in (valued or (valued_by_cell(a), valued_by_cell(b))))
    shared = ta.keys() & tb.keys()
    contexts = sorted({context for context, _ in shared})
    levels = sorted({n for _, n in shared})
    return [
        RatioRow(context, [ratio_cell(n, ta.get((context, n)), tb.get((context, n))) for n in levels])
        for context in contexts
    ]


def is_flag(token: str) -> bool:
    """An option token ("--port", "-e"), not a negative number or a bare dash."""
    return token.startswith("-") and len(token) > 1 and not token[1].isdigit() and token[1] != "."


@functools.lru_cache(maxsize=4096)
def launch_options(command: str | None) -> dict[str, str]:
    """Launch command as {option: value}; words before the first option are "command", a bare flag maps to itself."""
    options: dict[str, list[str]] = {}
    key = "command"
    for token in launch_words(command):
        if is_flag(token):
            key, _, value = token.partition("=")
            words = options.setdefault(key, [])
            if value:
                words.append(value)
                key = "command"
        else:
            options.setdefault(key, []).append(token)
    return {k: " ".join(v) if v else k for k, v in options.items()}


def launch_diffs(a: Bundle, b: Bundle) -> list[tuple[str, str | None, str | None]]:
    """Launch options whose values differ, in order of first appearance (a's, then b's)."""
    oa, ob = launch_options(a.launch_command), launch_options(b.launch_command)
    keys = list(dict.fromkeys([*oa, *ob]))
    return [(f"Launch {k}", oa.get(k), ob.get(k)) for k in keys if oa.get(k) != ob.get(k)]


def section_values(bundle: Bundle, shown: list[Section] | None = None) -> dict[str, str]:
    """The run page's Hardware, Engine and Run fields as label -> display value, plus the model, then how it
    was served (API, topology, speculative decoding); `shown` is the run's view's sections, where the caller
    has them (they are made otherwise)."""
    values = {"Model": bundle.model}
    values.update({field.label: field.value for section in (sections(bundle) if shown is None else shown) for field in section.fields})
    values.update({field.label: field.value for field in setup_fields(bundle)})
    return values


def field_diffs(a: Bundle, b: Bundle, shown: tuple[list[Section] | None, list[Section] | None] = (None, None)
                ) -> list[tuple[str, str | None, str | None]]:
    """What differs between two runs: model, hardware, engine, run settings, then launch options
    (`shown`: the runs' views' sections, as section_values takes them)."""
    va, vb = section_values(a, shown[0]), section_values(b, shown[1])
    labels = list(dict.fromkeys([*va, *vb]))
    diffs = [(label, va.get(label), vb.get(label)) for label in labels if va.get(label) != vb.get(label)]
    return diffs + launch_diffs(a, b)
