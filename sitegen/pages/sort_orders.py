"""The listings' sort orders: every column's orderings of the runs (index_view.sort_orders), each
as its first screen of records, so that a first sort draws at once from one small file, and as
every run's position, which the page loads with the data chunks."""

from __future__ import annotations

import msgspec

from sitegen.pages.context import Site, fingerprints
from sitegen.pages.kinds import Kind
from sitegen.pages.listings import RECORD, SORT_KEYS
from sitegen.publish.swap import Publication, Stage
from sitegen.rebuild.outputs import Output
from sitegen.urls import positions_file, sort_file
from sitegen.views.index_view import COLUMNS, DIRECTIONS, SortKey, positions_script, sort_orders, sort_script

_sort_keys_decoder = msgspec.msgpack.Decoder(list[SortKey])


def write_sort_orders(stage: Stage, site: Site, plan: Publication) -> None:
    """Every column's orders of the listings' runs (positions in the data chunks' order: newest first).
    A first screen is written only when its runs changed, and positions only when they moved: after
    one run changed, the orders whose first screen shows it, and the positions of the columns its
    figures moved it in (sorting is cheap; making and writing every order is not)."""
    paths = [file(column, direction) for column, _, _ in COLUMNS for direction in DIRECTIONS for file in (sort_file, positions_file)]
    # Every run as before (its bytes, its relations, the code), and at least one: an empty site's steady
    # set is empty too, whatever the site before it held.
    if site.entries and len(site.steady) == len(site.entries) and not plan.kept_as_before(paths):
        return
    listed = site.listing_order
    records = site.pieces(listed, RECORD)
    numerals: list[str] = []
    for order in sort_orders([_sort_keys_decoder.decode(keys) for keys in site.pieces(listed, SORT_KEYS)]):
        if not plan.unchanged(Output(order.path, fingerprints([listed[i] for i in order.first]))):
            stage.write(order.path, sort_script(order, records))
        if not plan.unchanged(Output(order.positions_path, facts=(msgspec.msgpack.encode(order.positions),))):
            numerals = numerals or [str(i) for i in range(len(listed))]
            stage.write(order.positions_path, positions_script(order, numerals))


KIND = Kind(name="sort orders", lane="main", write=write_sort_orders, pieces=(RECORD, SORT_KEYS))
