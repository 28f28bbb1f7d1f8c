"""The ranking page: every run ranked by capacity at a context and target, its first screen as HTML
and every run in data chunks, which its script ranks at a reader's own targets."""

from __future__ import annotations

import msgspec

from sitegen.content.catalog import Piece, Scanned
from sitegen.figures.capacity import RankedRun, Standing, ranked_run, standing_record
from sitegen.pages.context import Site, fingerprints, write_page
from sitegen.pages.kinds import Kind
from sitegen.publish.stage import Stage
from sitegen.rebuild.outputs import Output
from sitegen.rebuild.plan import Publication
from sitegen.urls import RANKING, ranking_chunk
from sitegen.views.capacity_view import RankingView, chunk_record, ranking_chunks, ranking_script, ranking_view


def _ranked(run: Scanned) -> RankedRun:
    return ranked_run(run.bundle)


def _chunk_record(run: Scanned) -> bytes:
    return chunk_record(run.shared(_ranked))


def _standing(run: Scanned) -> bytes:
    return standing_record(run.shared(_ranked))


RANKED = Piece("ranked", _chunk_record)  # a run in the ranking's data chunks (capacity_view.chunk_record)
STANDING = Piece("standing", _standing)  # a run as the first screen ranks it, at the page's own target (capacity.standing_record)


def first_ranked(site: Site) -> RankingView | None:
    """The ranking's first screen, from each run's standing."""
    return ranking_view(msgspec.json.decode(b"[" + b",".join(site.pieces(site.by_id, STANDING)) + b"]", type=list[Standing]))


def write_ranking(stage: Stage, site: Site, plan: Publication) -> None:
    """The ranking page and its data chunks (of the runs by id), from each run's pieces: each chunk
    written only when one of its runs changed, the page when any did."""
    chunks = []
    for index, members in enumerate(ranking_chunks(site.by_id)):
        chunks.append(path := ranking_chunk(index))
        if not plan.unchanged(Output(path, fingerprints(members))):
            stage.write(path, ranking_script(index, site.pieces(members, RANKED)))
    if not plan.unchanged(Output(RANKING.file, fingerprints(site.by_id), context=True)):
        write_page(stage, site, "ranking.html", RANKING, ranking=first_ranked(site), chunks=" ".join(RANKING.urls.to(path) for path in chunks))


KIND = Kind(name="ranking", lane="beside", write=write_ranking, pieces=(RANKED, STANDING))
