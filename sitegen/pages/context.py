"""What every page of a build shares: the site's small records of its runs, and the one Jinja context.

Each page is written through `write_page`, which hands the template the values every page
reads (`nav_pages`, and `urls`, the links relative to that page) beside the page's own view.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import jinja2
import msgspec

from sitegen.content.catalog import Piece, RunEntry, Scanned, pieces_at
from sitegen.figures.summary import RunSummary, summarize
from sitegen.pages.render import DEFAULT_TEMPLATES
from sitegen.publish.swap import Stage
from sitegen.urls import Page
from sitegen.views.index_view import newest_first
from sitegen.views.runview import title


class Site(msgspec.Struct, kw_only=True):
    """What a build knows of every run (small records, not bundles), shared by the page writers."""

    runs: Path
    entries: list[RunEntry]
    pages: list
    pairs: list[tuple[RunEntry, RunEntry, str]]
    env: jinja2.Environment
    code: str
    templates: Path = DEFAULT_TEMPLATES
    shared_key: str = ""
    positions: dict[str, int] = {}  # where each of the build's pieces is in an entry's, by name (RunEntry.pieces)
    steady: frozenset[str] = frozenset()  # runs whose pages' keys are the previous build's (catalog.steady_runs)
    in_id_order: list[RunEntry] = []
    in_listing_order: list[RunEntry] = []

    @property
    def by_id(self) -> list[RunEntry]:
        """The runs in id order (the ranking's and the run lists'), sorted once, when first asked."""
        if len(self.in_id_order) != len(self.entries):
            self.in_id_order = sorted(self.entries, key=lambda e: e.id)
        return self.in_id_order

    @property
    def listing_order(self) -> list[RunEntry]:
        """The runs in the listings' order (index_view.newest_first: the data chunks', the sort orders' and
        the feed's), sorted once, when first asked."""
        if len(self.in_listing_order) != len(self.entries):
            self.in_listing_order = newest_first(self.entries)
        return self.in_listing_order

    def piece(self, entry: RunEntry, piece: Piece) -> memoryview:
        """A run's piece."""
        return entry.piece(self.positions[piece.name])

    def pieces(self, entries: Sequence[RunEntry], piece: Piece) -> list[memoryview]:
        """The runs' pieces of one kind, in order."""
        return pieces_at(entries, self.positions[piece.name])

    def context(self, page: Page) -> dict:
        """Template values every page shares: the navigation and the links from `page`."""
        return {"nav_pages": self.pages, "urls": page.urls}

    @property
    def context_key(self) -> str:
        """What of the shared values a page's key must cover (computed once: every page asks)."""
        if not self.shared_key:
            self.shared_key = json.dumps([(p.slug, p.title) for p in self.pages])
        return self.shared_key


def fingerprints(entries: Sequence[RunEntry]) -> list[str]:
    """The runs' fingerprints, in order: what an output made from their bundles declares it reads."""
    return [e.fingerprint for e in entries]


def summary_of(run: Scanned) -> RunSummary:
    """A run's summary, which several pieces are made from (shared: Scanned.shared(summary_of))."""
    return summarize(run.bundle)


def _title(run: Scanned) -> bytes:
    return title(run.bundle).encode()


TITLE = Piece("title", _title)  # a run's title, as other runs' pages name it


def run_title(site: Site, entry: RunEntry) -> str:
    """A run's title (its TITLE piece)."""
    return str(site.piece(entry, TITLE), "utf-8")


def write_page(stage: Stage, site: Site, template: str, target: Page, **view: object) -> None:
    """Render `template` with the shared context and the page's own view into the target page's file."""
    stage.write(target.file, site.env.get_template(template).render(**site.context(target), **view))
