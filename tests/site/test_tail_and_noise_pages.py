"""A run measured with tail percentiles and repeats: the run page shows them outside #matrix, and a
comparison page says which differences lie within the noise."""

from __future__ import annotations

import html
import re
from pathlib import Path

import msgspec

from runner.bundle.repeats import combine
from runner.bundle.schema import Bundle, DecodeCell
from sitegen.build import build_site
from tests.builders import make_bundle
from tests.page_text import MatrixText
from tests.sample_site import write_content


def _repeated(cell: DecodeCell, totals: list[float]) -> DecodeCell:
    """The cell as if measured once per total, with tail percentiles in each repeat."""
    return combine([
        msgspec.structs.replace(cell, total_tok_s=total, ttft_p90_ms=cell.ttft_ms * 1.5, ttft_p99_ms=cell.ttft_ms * 2,
                                tbt_p90_ms=cell.tbt_ms * 1.2, tbt_p99_ms=cell.tbt_ms * 1.4)
        for total in totals
    ])


def _with_repeats(bundle: Bundle, run_id: str, spreads: dict[tuple[int, int], list[float]]) -> Bundle:
    decode = [_repeated(c, spreads[(c.context_tokens, c.concurrency)]) if (c.context_tokens, c.concurrency) in spreads else c
              for c in bundle.decode]
    return msgspec.structs.replace(bundle, id=run_id, decode=decode)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_tails_repeats_and_noise_are_shown(tmp_path: Path) -> None:
    base = make_bundle()
    first = _with_repeats(base, "ling-first", {(8192, 1): [160.0, 164.1, 170.0], (8192, 2): [280.0, 284.6, 290.0]})
    # Measured again: 8K × 1 overlaps the first run's range, 8K × 2 lies clear above it.
    second = _with_repeats(base, "ling-second", {(8192, 1): [168.0, 171.0, 175.0], (8192, 2): [300.0, 305.0, 310.0]})
    second = msgspec.structs.replace(second, measured_at=base.measured_at.replace(day=4))
    build_site(write_content(tmp_path, runs=(first, second)), tmp_path / "site")

    page = (tmp_path / "site" / "runs" / "ling-first" / "index.html").read_text()
    matrix = MatrixText()
    matrix.feed(page)
    assert "p99" not in "".join(matrix.parts) and "Spread" not in "".join(matrix.parts)
    tail = _text(page[page.index('id="tail"'):page.index("</section>", page.index('id="tail"'))])
    assert "Tail latency and noise" in tail
    # 8K × 1 of make_bundle: TTFT 46.75 ms (p50), ×1.5 = 70 ms, ×2 = 94 ms; 6.1 ms between tokens, ×1.2, ×1.4; three repeats, 160–170.
    assert "8K 1 47 ms 70 ms 94 ms 6.1 ms 7.3 ms 8.5 ms 3 160.0 – 170.0 6.1 %" in tail
    assert "8K 2 " in tail and "16K" not in tail, "only the cells with tails or repeats are listed"

    compare = (tmp_path / "site" / "compare" / "ling-first-vs-ling-second.html").read_text()
    sentence = html.unescape(re.search(r'<p class="caption noise">(.*?)</p>', compare)[1])
    assert sentence == ("Cells with repeats in either run: 2. Within the noise, where the ranges of the repeats' total "
                        "tok/s overlap (marked ≈), so the difference may be chance: 1. Beyond the noise: 1.")
    ratios = re.findall(r'<td class="([^"]*)"><span class="value">([^<]*)</span>', compare)
    assert ratios[0] == ("within-noise", "≈ 1.04×") and ratios[1] == ("ratio-up", "1.07×")
