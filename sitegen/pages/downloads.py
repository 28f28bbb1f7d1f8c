"""The site-wide downloads: runs.json and runs.csv of every run, the bundle schema, the Atom feed of
the newest runs (their formats are exports')."""

from __future__ import annotations

import datetime as dt
import json

from runner.bundle.schema import bundle_json_schema
from sitegen.content.catalog import Piece, Scanned
from sitegen.pages import exports, series_pages
from sitegen.pages.context import Site, fingerprints, summary_of
from sitegen.pages.kinds import Kind
from sitegen.pages.verification import shown_of
from sitegen.publish.stage import Stage
from sitegen.rebuild.outputs import Output
from sitegen.rebuild.plan import Publication
from sitegen.urls import BUNDLE_SCHEMA, FEED_XML, RUNS_CSV, RUNS_JSON

FEED_RUNS = 100  # the feed carries the newest runs only: readers want what is new, not the archive
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _listed_json(run: Scanned) -> bytes:
    return exports.run_list_json(run.shared(summary_of), run.shared(shown_of).status)


def _listed_csv(run: Scanned) -> bytes:
    return exports.run_list_row(run.shared(summary_of), run.shared(shown_of).status)


LISTED_JSON = Piece("listed_json", _listed_json)  # a run's record in runs.json
LISTED_CSV = Piece("listed_csv", _listed_csv)  # its line of runs.csv


def write_run_lists(stage: Stage, site: Site, plan: Publication) -> None:
    """runs.json and runs.csv: each run's piece, joined in id order."""
    read = fingerprints(site.by_id)
    if not plan.unchanged(Output(RUNS_JSON, read)):
        stage.write_pieces(RUNS_JSON, exports.runs_json(site.pieces(site.by_id, LISTED_JSON)))
    if not plan.unchanged(Output(RUNS_CSV, read)):
        stage.write_pieces(RUNS_CSV, exports.runs_csv(site.pieces(site.by_id, LISTED_CSV)))


def write_schema(stage: Stage, site: Site, plan: Publication) -> None:
    """The bundle schema: the code's own."""
    if not plan.unchanged(Output(BUNDLE_SCHEMA)):
        stage.write(BUNDLE_SCHEMA, json.dumps(bundle_json_schema(), indent=2, sort_keys=True) + "\n")


def write_feed(stage: Stage, site: Site, plan: Publication) -> None:
    """The Atom feed of the newest runs, from their bundles, and of their series' notices, read again only when one
    of those runs or of their series changed (or another run became one of them)."""
    newest = site.listing_order[:FEED_RUNS]
    if not plan.unchanged(Output(FEED_XML, fingerprints(newest) + fingerprints(series_pages.recent_members(site)))):
        updated = newest[0].measured_at if newest and newest[0].measured_at else _EPOCH  # newest first: the latest date
        stage.write(FEED_XML, exports.atom_feed([e.bundle(site.runs) for e in newest], updated,
                                                [series_pages.notice_entry(flag) for flag in series_pages.flagged(site, plan)[0]]))


RUN_LISTS = Kind(name="run lists", lane="main", write=write_run_lists, pieces=(LISTED_JSON, LISTED_CSV))
SCHEMA = Kind(name="schema", lane="main", write=write_schema)
FEED = Kind(name="feed", lane="main", write=write_feed)
