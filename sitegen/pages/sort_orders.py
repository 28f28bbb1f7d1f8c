"""The listings' sort orders: every column's orderings of the runs (index_view.sort_orders), each
with its first screen of records, so that a first sort draws at once from one small file."""

from __future__ import annotations

import msgspec

from sitegen.pages.context import Site, fingerprints
from sitegen.pages.kinds import Kind
from sitegen.pages.listings import RECORD, SORT_KEYS
from sitegen.publish.swap import Publication, Stage
from sitegen.rebuild.outputs import Output
from sitegen.urls import sort_file
from sitegen.views.index_view import COLUMNS, DIRECTIONS, SortKey, sort_orders, sort_script

_sort_keys_decoder = msgspec.msgpack.Decoder(list[SortKey])


def write_sort_orders(stage: Stage, site: Site, plan: Publication) -> None:
    """Every column's orders of the listings' runs (positions in the data chunks' order: newest first).
    Each is written only when its positions or the runs of its first screen changed: after one run
    changed, the orders of the columns its figures moved it in, and those whose first screen shows it
    (sorting is cheap; making and writing every order is not)."""
    paths = [sort_file(column, direction) for column, _, _ in COLUMNS for direction in DIRECTIONS]
    # Every run as before (its bytes, its relations, the code), and at least one: an empty site's steady
    # set is empty too, whatever the site before it held.
    if site.entries and len(site.steady) == len(site.entries) and not plan.kept_as_before(paths):
        return
    listed = site.listing_order
    records = site.pieces(listed, RECORD)
    numerals: list[str] = []
    for order in sort_orders([_sort_keys_decoder.decode(keys) for keys in site.pieces(listed, SORT_KEYS)]):
        shown = fingerprints([listed[i] for i in order.first])
        if not plan.unchanged(Output(order.path, shown, facts=(msgspec.msgpack.encode(order.positions),))):
            numerals = numerals or [str(i) for i in range(len(listed))]
            stage.write(order.path, sort_script(order, records, numerals))


KIND = Kind(name="sort orders", lane="main", write=write_sort_orders, pieces=(RECORD, SORT_KEYS))
