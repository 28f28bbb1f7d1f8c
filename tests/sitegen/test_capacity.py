"""`sitegen capacity` on the seed pages against an independent computation from the pages' own text,
and its one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import main
from sitegen.import_files import import_files
from sitegen.importers.options import ImportOptions
from tests.builders import SEEDS

# (TTFT ms, per-user tok/s, GPU-hour USD or None): loose, tight, on exact page values, and impossible.
TARGETS = [
    (1000, 20, 2.5), (500, 50, None), (10_000, 5, 3.99), (845, 46.3, 1.0), (250, 120, 12.0), (100, 10_000, 2.0),
    (0, 0, 0.0), (2292, 41.7, None),
]


def _number(text: str) -> float | None:
    """A figure as the page prints it: "26.5K", "1,621.8", "1,030 ms", "—"."""
    text = text.strip().removesuffix(" ms").replace(",", "")
    if text == "—":
        return None
    return float(text[:-1]) * 1000 if text.endswith("K") else float(text)


def _context(label: str) -> int:
    return round(float(label[:-1]) * 1024) if label.endswith("K") else int(label)


def page_cells(seed: Path) -> tuple[int, list[dict]]:
    """The GPU count and the decode rows of a seed's All measurements table, read straight from its text."""
    lines = [line.strip() for line in seed.read_text().splitlines()]
    gpus = next(int(lines[i + 1].removeprefix("- ")) if line == "- GPU count" else int(line.split(": ")[1])
                for i, line in enumerate(lines) if line.startswith("GPU count") or line == "- GPU count")
    cells = []
    for line in lines:
        parts = [p.strip() for p in (line.strip("|").split("|") if line.startswith("|") else line.split("\t"))]
        if parts[0] == "Sustained decode" and len(parts) == 12:
            cells.append({"context": _context(parts[1]), "n": int(parts[2]), "status": parts[3],
                          "total": _number(parts[4]), "per_user": _number(parts[5]), "ttft": _number(parts[6])})
    return gpus, cells


def expected(gpus: int, cells: list[dict], ttft: float, per_user: float, price: float | None) -> list[dict]:
    """The issue's rule, written out again: per context, the Valid cell with the most total tok/s meeting both targets."""
    answers = []
    for context in sorted({c["context"] for c in cells}):
        ok = [c for c in cells if c["context"] == context and c["status"] == "Valid"
              and c["ttft"] is not None and c["ttft"] <= ttft and c["per_user"] is not None and c["per_user"] >= per_user]
        if not ok:
            answers.append({"context_tokens": context, "concurrency": None, "total_tok_s": None,
                            "tok_s_per_gpu": None, "usd_per_million_tokens": None})
            continue
        best = sorted(ok, key=lambda c: (-c["total"], c["n"]))[0]
        cost = price * gpus / (best["total"] * 3600) * 1e6 if price is not None else None
        answers.append({"context_tokens": context, "concurrency": best["n"], "total_tok_s": best["total"],
                        "tok_s_per_gpu": best["total"] / gpus, "usd_per_million_tokens": cost})
    return answers


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    """Each seed page imported with `sitegen import`, as the bundle file the command reads."""
    out = tmp_path_factory.mktemp("runs")
    written, errors = import_files(SEEDS, out, ImportOptions())
    assert not errors
    return dict(zip(SEEDS, written))


def _capacity(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["capacity", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name[:3])
def test_json_answers_match_an_independent_computation_from_the_page(bundles: dict[Path, Path], seed: Path) -> None:
    gpus, cells = page_cells(seed)
    assert len(cells) >= 40 and gpus >= 2
    qualified = 0
    for ttft, per_user, price in TARGETS:
        args = [str(bundles[seed]), "--ttft-ms", str(ttft), "--min-tok-s-per-user", str(per_user), "--json"]
        code, output = _capacity(*args, *(["--gpu-hour-usd", str(price)] if price is not None else []))
        assert code == 0, output
        got, want = json.loads(output), expected(gpus, cells, ttft, per_user, price)
        assert [g["context_tokens"] for g in got] == [w["context_tokens"] for w in want]
        for g, w in zip(got, want):
            assert set(g) == set(w)
            assert g["concurrency"] == w["concurrency"], (ttft, per_user, g)
            for key in ("total_tok_s", "tok_s_per_gpu", "usd_per_million_tokens"):
                assert g[key] == (pytest.approx(w[key], rel=1e-12) if w[key] is not None else None), (key, g)
        qualified += sum(1 for w in want if w["concurrency"] is not None)
    assert qualified > 10, "the targets must pick cells, not only find none"


def test_the_table_reads_at_a_glance(bundles: dict[Path, Path]) -> None:
    seed = SEEDS[0]
    code, output = _capacity(str(bundles[seed]), "--ttft-ms", "1000", "--min-tok-s-per-user", "20", "--gpu-hour-usd", "2.5")
    assert code == 0, output
    lines = output.splitlines()
    assert lines[0] == "Ling-3.0-flash-fp4 on H200 NVL 141GB ×2"
    assert lines[1] == "TTFT ≤ 1,000 ms · ≥ 20 tok/s per user · $2.50 per GPU-hour"
    assert lines[3].split("  ")[0] == "Context" and "USD per million output tokens" in lines[3]
    # 8K: 128 requests at 845 ms and 46.3 tok/s per user, 5,912.7 tok/s on 2 GPUs: 2.5 × 2 / (5912.7 × 3600) × 1e6 = $0.23.
    assert re.split(r"\s{2,}", lines[4]) == ["8K", "128", "5,912.7", "2,956.4", "$0.23"]
    code, output = _capacity(str(bundles[seed]), "--ttft-ms", "100", "--min-tok-s-per-user", "150")
    assert "USD" not in output
    assert re.split(r"\s{2,}", output.splitlines()[5]) == ["16K", "no cell meets both targets"]


@pytest.mark.parametrize(("args", "message"), [
    (["missing.json", "--ttft-ms", "1", "--min-tok-s-per-user", "1"], "missing.json: cannot read: no such file"),
    (["{bundle}", "--ttft-ms", "-5", "--min-tok-s-per-user", "1"], "--ttft-ms: must be a number of 0 or more, got -5"),
    (["{bundle}", "--ttft-ms", "5", "--min-tok-s-per-user", "-0.1"], "--min-tok-s-per-user: must be a number of 0 or more, got -0.1"),
    (["{bundle}", "--ttft-ms", "5", "--min-tok-s-per-user", "1", "--gpu-hour-usd", "-2"], "--gpu-hour-usd: must be a number of 0 or more, got -2"),
    (["{bundle}", "--ttft-ms", "fast", "--min-tok-s-per-user", "1"], "--ttft-ms: not a number: 'fast'"),
    (["{bundle}", "--ttft-ms", "inf", "--min-tok-s-per-user", "1"], "--ttft-ms: must be a number of 0 or more, got inf"),
    (["{bundle}", "--ttft-ms", "5"], "--min-tok-s-per-user is required"),
    (["{page}", "--ttft-ms", "5", "--min-tok-s-per-user", "1"], "{page}:1:1: invalid JSON: invalid character"),
])
def test_bad_input_gets_one_error_line(bundles: dict[Path, Path], args: list[str], message: str) -> None:
    names = {"bundle": str(bundles[SEEDS[0]]), "page": str(SEEDS[0])}
    code, output = _capacity(*(a.format(**names) for a in args))
    assert code == 1
    assert output == f"error: {message.format(**names)}\n"
