"""A speed-matrix bundle given to `sitegen import`: read as `sitegen build` reads one, kept under its own id."""

from __future__ import annotations

from runner.bundle.schema import decode_bundle
from sitegen.content.loader import decoded
from sitegen.importers.importer import Found, Importer, Source


def recognises(source: Source) -> bool:
    """A bundle states its schema version beside its decode cells."""
    return isinstance(source.data, dict) and "schema" in source.data and "decode" in source.data


def read(source: Source) -> Found:
    """The bundle as its file holds it; its id stays unless --id gives another."""
    return Found(decoded(source.path, source.text.encode(), decode_bundle), name=lambda bundle: bundle.id)


IMPORTER = Importer(name="speed-matrix", recognises=recognises, read=read)
