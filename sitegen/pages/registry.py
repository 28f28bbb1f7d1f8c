"""The registry of output kinds: every page type and download of the site (`KINDS`), and what the
build asks of them: the kinds of each lane, the per-run pieces they read, the renders of the workers.

Adding a page type takes its view, its template, a module declaring its outputs (a Kind: each
output's path and inputs, rebuild.outputs) and its line in KINDS; the per-run pieces it reads are
made for every run from then on, and its outputs render again exactly when their inputs change.
"""

from __future__ import annotations

from collections.abc import Callable

from sitegen.content.catalog import Piece
from sitegen.pages import content_pages, downloads, listings, ranking_page, run_pages, series_pages, sort_orders, static_files
from sitegen.pages.kinds import Kind, Lane

# In each lane in this order.
KINDS: tuple[Kind, ...] = (
    run_pages.KIND,
    ranking_page.KIND, listings.KIND, series_pages.KIND,
    content_pages.KIND, sort_orders.KIND, downloads.RUN_LISTS, downloads.SCHEMA, downloads.FEED, static_files.KIND,
)


def in_lane(lane: Lane) -> list[Kind]:
    """The kinds written in a lane of the build, in their order."""
    return [kind for kind in KINDS if kind.lane == lane]


def pieces() -> list[Piece]:
    """Every piece of a run the kinds read, once each, by name; two pieces of one name are a mistake."""
    found: dict[str, Piece] = {}
    for kind in KINDS:
        for piece in kind.pieces:
            if found.setdefault(piece.name, piece) is not piece:
                raise ValueError(f"two pieces of a run are named {piece.name!r}")
    return [found[name] for name in sorted(found)]


def renders() -> dict[str, Callable[..., None]]:
    """What renders each task of the "workers" kinds, by the task's first item."""
    return {name: render for kind in in_lane("workers") for name, render in kind.renders.items()}
