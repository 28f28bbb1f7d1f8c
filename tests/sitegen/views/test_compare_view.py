"""A comparison's speculative decoding and energy figures: both runs side by side in every cell either has them."""

from __future__ import annotations

import msgspec

from sitegen.views.compare_view import serving_comparison
from tests.builders import INVALID_ENERGY_CELL, make_bundle, make_served_bundle


def test_both_runs_figures_side_by_side_where_either_has_them() -> None:
    served, plain = make_served_bundle("served"), make_bundle("plain")
    found = serving_comparison(plain, served)
    assert found.headers == ["Mean acceptance length", "Acceptance rate", "J per output token", "tok/s per kW"]
    rows = {(r.context, r.concurrency): r for r in found.rows}
    assert len(rows) == 7 and all(r.a == ["—"] * 4 for r in rows.values()), "the plain baseline has none"
    cell = next(c for c in served.decode if (c.context_tokens, c.concurrency) == (8192, 1))
    assert rows[("8K", 1)].b[:3] == [f"{cell.speculative.mean_acceptance_length:.2f}", f"{cell.speculative.acceptance_rate * 100:.1f} %",
                                     f"{cell.energy.joules_per_output_token:.1f} J"]
    assert rows[("32K", INVALID_ENERGY_CELL[1])].b[2:] == ["Invalid", "Invalid"]
    assert serving_comparison(plain, make_bundle("other")) is None


def test_a_kind_of_reading_neither_run_has_is_left_out() -> None:
    a, b = make_served_bundle("a", energy=False), make_served_bundle("b", speculative=False)
    assert serving_comparison(a, make_bundle("plain")).headers == ["Mean acceptance length", "Acceptance rate"]
    assert serving_comparison(make_bundle("plain"), b).headers == ["J per output token", "tok/s per kW"]
    for cell in b.decode:
        cell.energy = msgspec.UNSET
    assert serving_comparison(a, b).headers == ["Mean acceptance length", "Acceptance rate"]
