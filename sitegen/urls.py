"""The one place that knows where things live in the built site.

Every link in the site is relative to the page it sits on, so the site works
from any sub-folder of a static host and from `file://` alike. Each page the build
writes is a `Page` record of its site path; the file it is written to and its links
(`Page.urls`, relative to it, as MkDocs' `File.url_relative_to`) follow from that path.
"""

from __future__ import annotations

from dataclasses import dataclass


def run_dir(run_id: str) -> str:
    """Folder of a run, relative to the site root."""
    return f"runs/{run_id}/"


def run_file(run_id: str, name: str) -> str:
    """A file of a run's folder: its plain text, bundle.json, measurements.csv, picker data."""
    return run_dir(run_id) + name


def model_dir(slug: str) -> str:
    """Folder of the page listing every run of one model."""
    return f"models/{slug}/"


def gpu_dir(slug: str) -> str:
    """Folder of the page listing every run on one GPU."""
    return f"gpus/{slug}/"


def compare_file(slug: str) -> str:
    """A comparison page generated at build time: one flat file, as there can be thousands."""
    return f"compare/{slug}.html"


def series_dir(series_id: str) -> str:
    """Folder of the page following one setup's runs over time."""
    return f"series/{series_id}/"


RANKING_DIR = "capacity/"  # the page ranking every run by capacity at a target


def ranking_chunk(index: int) -> str:
    """A data chunk of the ranking page, whose script ranks every run at a reader's own targets."""
    return f"{RANKING_DIR}runs-{index}.js"


def data_chunk(index: int) -> str:
    """A data chunk of the listings: a thousand runs' records, which their scripts load on demand."""
    return f"data/runs-{index}.js"


def sort_file(key: str, direction: str) -> str:
    """One column's ordering of the listings in one direction: its first screen of records."""
    return f"data/sort-{key}-{direction}.js"


def positions_file(key: str, direction: str) -> str:
    """The same ordering's every run's place in the data chunks, loaded once the whole set is asked for."""
    return f"data/positions-{key}-{direction}.js"


RUNS_JSON = "runs.json"  # every run's summary, for scripts
RUNS_CSV = "runs.csv"  # the same as a spreadsheet
FEED_XML = "feed.xml"  # the Atom feed of the newest runs
BUNDLE_SCHEMA = "schema/bundle.schema.json"


def static_file(name: str) -> str:
    """A stylesheet, script or image of the templates' static folder."""
    return "static/" + name


def page_dir(slug: str) -> str:
    """Folder of a content page from content/pages/*.md."""
    return f"{slug}/"


@dataclass(frozen=True)
class Urls:
    """Relative links from a page `depth` folders below the site root."""

    depth: int

    @property
    def root(self) -> str:
        return "../" * self.depth

    def to(self, site_path: str) -> str:
        """Link to a site-root-relative path; folders get an explicit index.html for file://."""
        target = site_path + "index.html" if site_path.endswith("/") or site_path == "" else site_path
        return self.root + target

    def home(self) -> str:
        return self.to("")

    def run(self, run_id: str) -> str:
        return self.to(run_dir(run_id))

    def run_file(self, run_id: str, name: str) -> str:
        return self.to(run_file(run_id, name))

    def model(self, slug: str) -> str:
        return self.to(model_dir(slug))

    def gpu(self, slug: str) -> str:
        return self.to(gpu_dir(slug))

    def compare(self, slug: str) -> str:
        return self.to(compare_file(slug))

    def page(self, slug: str) -> str:
        return self.to(page_dir(slug))

    def static(self, name: str) -> str:
        return self.to(static_file(name))


@dataclass(frozen=True)
class Page:
    """One page of the site by its site path: a folder ("runs/x/"; "" is the root) or a file ("compare/a-vs-b.html")."""

    path: str

    @property
    def file(self) -> str:
        """The file the page is written to: a folder's index.html."""
        return self.path + "index.html" if self.path.endswith("/") or self.path == "" else self.path

    @property
    def urls(self) -> Urls:
        """Links from this page to anywhere in the site."""
        return Urls(self.file.count("/"))


HOME = Page("")
PICKER = Page("compare/")
RANKING = Page(RANKING_DIR)
