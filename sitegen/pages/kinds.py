"""What a kind of output is (a page type, a download), as the registry lists it (registry.KINDS)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from sitegen.content.catalog import Piece
from sitegen.pages.context import Site
from sitegen.publish.stage import Stage
from sitegen.rebuild.plan import Publication

# Where in a build a kind's outputs are written:
# "beside": by `write`, in a process forked beside the build, while the comparison pairs are chosen (it may
#   not read them) and the run pages render;
# "main": by `write`, in the build's process while the workers render (it may read the pairs);
# "workers": `plan` lists its changed outputs as render tasks, which the workers render from the bundles.
Lane = Literal["beside", "main", "workers"]
Task = tuple  # a render task: (the name of its render, its arguments...); small, as it is sent to a worker
Write = Callable[[Stage, Site, Publication], None]


class Kind(msgspec.Struct, frozen=True, kw_only=True):
    """A kind of output: where in the build it is written, how, and the per-run pieces it reads.

    Each of its outputs is declared (rebuild.outputs.Output: its path and inputs) and asked of the plan
    (`Publication.unchanged`) before it is written, so it renders again exactly when an input changed.
    A "workers" kind's `plan` returns its tasks, and `renders` by name what renders one in a worker:
    render(renderer, *arguments), with the renderer's bundles (run_pages.Renderer).
    """

    name: str
    lane: Lane
    write: Write | None = None
    plan: Callable[[Site, Publication], list[Task]] | None = None
    renders: dict[str, Callable[..., None]] = {}
    pieces: tuple[Piece, ...] = ()  # what it reads of each run, made when the run's bundle is read (catalog.Piece)

    def __post_init__(self) -> None:
        workers = self.lane == "workers"
        if workers != (self.plan is not None) or workers != bool(self.renders) or workers == (self.write is not None):
            raise ValueError(f"the kind {self.name!r} needs a plan and renders in the workers lane, else a write")
