"""What every page of a build shares: the site's small records of its runs, and the one Jinja context.

Each page is written through `write_page`, which hands the template the values every page
reads (`nav_pages`, and `urls`, the links relative to that page) beside the page's own view.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import msgspec

from sitegen.cache import digest
from sitegen.catalog import RunEntry
from sitegen.index_view import newest_first
from sitegen.staging import Stage
from sitegen.summary import RunSummary
from sitegen.urls import Page


class Site(msgspec.Struct, kw_only=True):
    """What a build knows of every run (small records, not bundles), shared by the page writers."""

    runs: Path
    entries: list[RunEntry]
    pages: list
    pairs: list[tuple[RunEntry, RunEntry, str]]
    env: jinja2.Environment
    code: str
    shared_key: str = ""
    steady: frozenset[str] = frozenset()  # runs whose pages' keys are the previous build's (catalog.steady_runs)
    decoded: list[RunSummary] = []
    in_id_order: list[RunEntry] = []
    in_listing_order: list[RunEntry] = []

    @property
    def summaries(self) -> list[RunSummary]:
        """Every run's summary, in the entries' order: decoded once, when first asked (by the listings)."""
        if len(self.decoded) != len(self.entries):
            self.decoded = [e.run_summary() for e in self.entries]
        return self.decoded

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

    def runs_key(self, entries: list[RunEntry]) -> str:
        """What an output rendered from these runs depends on: the code and each run's fingerprint (which
        decides its summary and records), in order. Hashing 10,000 fingerprints is far cheaper than encoding
        the summaries or joining the records; they are all as long, so joined they cannot run together."""
        return digest(self.code, "".join([e.fingerprint for e in entries]))

    def context(self, page: Page) -> dict:
        """Template values every page shares: the navigation and the links from `page`."""
        return {"nav_pages": self.pages, "urls": page.urls}

    @property
    def context_key(self) -> str:
        """What of the shared values an output's key must cover (computed once: every output asks)."""
        if not self.shared_key:
            self.shared_key = json.dumps([(p.slug, p.title) for p in self.pages])
        return self.shared_key


def write_page(stage: Stage, site: Site, template: str, target: Page, **view: object) -> None:
    """Render `template` with the shared context and the page's own view into the target page's file."""
    stage.write(target.file, site.env.get_template(template).render(**site.context(target), **view))
