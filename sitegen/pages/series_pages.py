"""Series pages: one per setup measured at least twice, charting its key figures over time, with the
notices of its newest run; and what other outputs show of the series (a run page's link and notices,
the index's lines, the feed's entries), all from each run's series point, a per-run piece.

A series page declares the bundles of its runs, so a rebuild renders again exactly the series whose
runs changed.
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

import msgspec

from sitegen.content.catalog import CACHE_DIR, Piece, RunEntry, Scanned
from sitegen.figures.series import Series, SeriesPoint, build_series, series_point
from sitegen.pages.context import Site, fingerprints, write_page
from sitegen.pages.exports import TAG_PREFIX, atom_time, sub
from sitegen.pages.kinds import Kind
from sitegen.publish.layout import read_kept
from sitegen.publish.stage import Stage
from sitegen.rebuild.keys import fingerprint
from sitegen.rebuild.outputs import Output
from sitegen.rebuild.plan import Publication
from sitegen.slug import slugify
from sitegen.urls import Page, Urls, series_dir
from sitegen.views.runview import title
from sitegen.views.series_view import headline_first, notice_text, series_view

INDEX_NOTICES = 10  # series the index lists with a notice, newest first: a line each, however many runs there are
RECENT_RUNS = 100  # the index and the feed give the notices of the series of the newest runs, the feed's runs: what is news
RUN_NOTICES = 3  # notices a run page lists; its series page lists them all


class RunMark(msgspec.Struct, frozen=True, array_like=True):
    """What a run's page shows of its series: the series page's site path, the run's first notices and how many more."""

    series: str
    notices: list[str]
    more: int = 0


class Flagged(msgspec.Struct, frozen=True, array_like=True):
    """A series whose newest run has notices, as the index and the feed name it: by its first notice, and how many more."""

    run_id: str
    title: str
    series: str
    figure: str
    text: str
    measured_at: str  # as Atom writes it, which sorts as the time does
    more: int


class Member(msgspec.Struct, frozen=True, array_like=True):
    """A run's place in its series, all a build reads of every run to group them: the series' id and the run's date."""

    series: str
    measured_at: dt.datetime


def _series_point(run: Scanned) -> SeriesPoint | None:
    return series_point(run.bundle, title(run.bundle))


def _point(run: Scanned) -> bytes:
    return msgspec.msgpack.encode(run.shared(_series_point))


def _member(run: Scanned) -> bytes:
    point = run.shared(_series_point)
    return msgspec.msgpack.encode(None if point is None else Member(point.key.id, point.measured_at))


POINT = Piece("series_point", _point)  # the run's SeriesPoint (figures.series), or nil without a date
MEMBER = Piece("series_member", _member)  # its Member, or nil without a date
_point_decoder = msgspec.msgpack.Decoder(SeriesPoint | None)
_member_decoder = msgspec.msgpack.Decoder(Member | None)


class Made(msgspec.Struct):
    """A build's series, in one process: its runs grouped by series (from the small MEMBER pieces), and the series
    built from their points (the larger POINT pieces), each decoded only when an output asks for it."""

    entries: list  # the build's entries, held, so that another build's are never taken for them
    groups: dict[str, list[RunEntry]]
    built: dict[str, Series] = {}


_made: Made | None = None


def _made_for(site: Site) -> Made:
    global _made
    if _made is None or _made.entries is not site.entries:
        found: dict[str, list[tuple[dt.datetime, str, RunEntry]]] = {}
        for entry, piece in zip(site.entries, site.pieces(site.entries, MEMBER)):
            member = _member_decoder.decode(piece)
            if member is not None:
                found.setdefault(member.series, []).append((member.measured_at, entry.id, entry))
        by_date = {key: [e for *_, e in sorted(runs, key=lambda r: r[:2])] for key, runs in sorted(found.items()) if len(runs) > 1}
        _made = Made(site.entries, by_date)
    return _made


def groups(site: Site) -> dict[str, list[RunEntry]]:
    """The runs of each series of two runs or more, by the series' id, oldest first."""
    return _made_for(site).groups


def series_of(site: Site, series_id: str) -> Series:
    """One series, from its runs' points; kept for the process's later asks (the series pages')."""
    made = _made_for(site)
    made.built[series_id] = _series(site, series_id)
    return made.built[series_id]


def _series(site: Site, series_id: str) -> Series:
    """One series: the one kept if series_of made it, else made from its runs' points and not kept, for
    a pass over every series (every series' points and charts at once would hold the build's largest
    share of memory)."""
    made = _made_for(site)
    kept = made.built.get(series_id)
    if kept is not None:
        return kept
    (series,) = build_series(_point_decoder.decode(p) for p in site.pieces(made.groups[series_id], POINT))
    return series


class RunPlace(msgspec.Struct, frozen=True, array_like=True):
    """A run's place in its series as planning knows it: the series, and whether the run is its newest,
    whose page shows the series' notices (run_mark, made only for a page that is rendered)."""

    series_id: str
    newest: bool = False


def run_places(site: Site, wanted: set[str]) -> dict[str, RunPlace]:
    """The place of each wanted run that is in a series."""
    return {e.id: RunPlace(series_id, e is members[-1]) for series_id, members in groups(site).items() for e in members if e.id in wanted}


def place_bundles(site: Site, place: RunPlace | None) -> list[str]:
    """The bundles a run page reads through its series besides its own: for the newest run, every run of
    the series (its notices compare them)."""
    return fingerprints(groups(site)[place.series_id]) if place is not None and place.newest else []


def run_mark(site: Site, place: RunPlace) -> RunMark:
    """What a run's page shows of its series: the link and, for the newest run, its notices."""
    path = series_dir(place.series_id)
    if not place.newest:
        return RunMark(path, [])
    texts = [notice_text(n) for n in headline_first(_series(site, place.series_id).notices)]
    return RunMark(path, texts[:RUN_NOTICES], max(0, len(texts) - RUN_NOTICES))


def members_with(site: Site, changed: set[str]) -> set[str]:
    """Every run of the series that hold a changed run: their pages' links and notices may have changed too."""
    return {e.id for members in groups(site).values() if any(e.id in changed for e in members) for e in members}


def recent(site: Site) -> list[str]:
    """The series whose newest run is among the newest runs of the site (RECENT_RUNS), whose notices are news."""
    newest = {e.id for e in site.listing_order[:RECENT_RUNS]}
    return [series_id for series_id, members in groups(site).items() if members[-1].id in newest]


def recent_members(site: Site) -> list[RunEntry]:
    """The runs of the recent series, which their notices are made from."""
    return [e for series_id in recent(site) for e in groups(site)[series_id]]


class SeriesFlags(msgspec.Struct, array_like=True):
    """Each recent series' flag as a build made it (None: no notice), by series id, with the key of what
    it was made from (the build's code and its runs' fingerprints): kept in the state folder, so that
    the next build makes again only the flags of the series whose runs changed."""

    flags: dict[str, tuple[str, Flagged | None]] = {}


FLAGS = CACHE_DIR + "series-flags"  # a bookkeeping file of the plan (SeriesFlags, msgpack)


def series_flags(site: Site, kept: SeriesFlags | None = None) -> SeriesFlags:
    """The recent series' flags, each taken from `kept` (the previous build's) where made from the same."""
    was = kept.flags if kept is not None else {}
    made = {}
    for series_id in recent(site):
        key = fingerprint(msgspec.msgpack.encode([site.code, fingerprints(groups(site)[series_id])]))
        before = was.get(series_id)
        made[series_id] = before if before is not None and before[0] == key else (key, _flag(site, series_id))
    return SeriesFlags(made)


def _flag(site: Site, series_id: str) -> Flagged | None:
    """A series' flag: by its first notice, and how many more; None without a notice."""
    s = series_of(site, series_id)
    if not s.notices:
        return None
    first, newest = headline_first(s.notices)[0], s.points[-1]
    return Flagged(newest.run_id, newest.title, series_dir(s.id), first.figure, notice_text(first), atom_time(newest.measured_at),
                   len(s.notices) - 1)


def flagged(site: Site, plan: Publication) -> tuple[list[Flagged], SeriesFlags]:
    """The recent series with notices, newest run first, each by its first notice, for the index and the
    feed (the flags of the previous build's `plan` taken where made from the same); and the flags made."""
    made = series_flags(site, read_kept(plan.state, FLAGS, SeriesFlags))
    found = [flag for _, flag in made.flags.values() if flag is not None]
    return sorted(found, key=lambda f: (f.measured_at, f.run_id), reverse=True), made


def index_notices(stage: Stage, site: Site, plan: Publication) -> dict[str, object]:
    """The index's share of the notices: how many the recent series have and the newest few, a line each.
    The flags made are kept for the next build, written only when one changed."""
    found, made = flagged(site, plan)
    encoded = msgspec.msgpack.encode(made)
    if not plan.unchanged(Output(FLAGS, facts=(fingerprint(encoded),))):
        stage.write(FLAGS, encoded)
    return {"series_flags": found[:INDEX_NOTICES], "series_flags_total": len(found), "series_flags_window": RECENT_RUNS}


def notice_entry(flag: Flagged) -> ET.Element:
    """A notice as an entry of the Atom feed, linking its series page; its id names the run and the figure."""
    entry = ET.Element("entry")
    sub(entry, "title", f"{flag.text} · {flag.title}")
    sub(entry, "id", f"{TAG_PREFIX}{flag.run_id}/notice/{slugify(flag.figure)}")
    sub(entry, "updated", flag.measured_at)
    sub(entry, "link", href=Urls(0).to(flag.series), rel="alternate", type="text/html")
    sub(entry, "summary", flag.text + (f", and {flag.more} more on the series page" if flag.more else ""))
    return entry


def write_series(stage: Stage, site: Site, plan: Publication) -> None:
    """A page per series, each rendered only when one of its runs changed."""
    for series_id, members in groups(site).items():
        page = Page(series_dir(series_id))
        if not plan.unchanged(Output(page.file, fingerprints(members), context=True)):
            write_page(stage, site, "series.html", page, series=series_view(_series(site, series_id)))


KIND = Kind(name="series pages", lane="beside", write=write_series, pieces=(MEMBER, POINT))
