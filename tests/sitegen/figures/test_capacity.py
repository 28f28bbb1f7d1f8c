"""`sitegen capacity` on the seed pages against an independent computation from the pages' own text,
and its one-line errors; the ranking page's records kept per run against the rule run on whole runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from runner.bundle.schema import Bundle, encode_bundle
from sitegen.cli import main
from sitegen.figures.capacity import CHAT, JOULES_PER_OUTPUT_TOKEN, RankedRun, Standing, ranked_run, standing_record
from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from sitegen.views.capacity_view import (
    RANKING_CHUNK,
    RANKING_SCREEN,
    chunk_record,
    ranking,
    ranking_chunks,
    ranking_script,
    ranking_view,
    text_table,
)
from sitegen.views.charts import script_safe
from tests.builders import HOSTILE, SEEDS, make_bundle, make_served_bundle

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
                            "tok_s_per_gpu": None, "usd_per_million_tokens": None, "joules_per_output_token": None, "tok_s_per_kw": None})
            continue
        best = sorted(ok, key=lambda c: (-c["total"], c["n"]))[0]
        cost = price * gpus / (best["total"] * 3600) * 1e6 if price is not None else None
        answers.append({"context_tokens": context, "concurrency": best["n"], "total_tok_s": best["total"],
                        "tok_s_per_gpu": best["total"] / gpus, "usd_per_million_tokens": cost,
                        "joules_per_output_token": None, "tok_s_per_kw": None})  # the seed pages have no energy readings
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


def ranking_runs() -> list[Bundle]:
    """More runs than the ranking's first screen, in no order: speeds that tie, that meet no target, runs
    without a GPU count, and runs that skipped the context most runs measured."""
    bundles = []
    for i in range(RANKING_SCREEN + 30):
        bundle = make_bundle(f"run-{(i * 37) % 131:03}", model=HOSTILE if i % 7 == 0 else f"Model-{i}",
                             gpu_count=None if i % 5 == 0 else 1 + i % 3, scale=(0.05 if i % 11 == 0 else 0.5 + (i % 13) / 4))
        if i % 9 == 0:
            bundle.decode = [c for c in bundle.decode if c.context_tokens != 16384]
        if i % 17 == 0:
            bundle.decode = [c for c in bundle.decode if c.context_tokens == 16384]
        bundles.append(bundle)
    return bundles


def chat_order(bundles: list[Bundle], context: int) -> list[str]:
    """The ranking's order at the Chat target written out again from the cells: tok/s per GPU of the best
    qualifying cell, then runs without a GPU count by total tok/s, then none qualifying, then not measured."""
    def key(bundle: Bundle) -> tuple:
        cells = [c for c in bundle.decode if c.context_tokens == context]
        ok = [c for c in cells if c.status == "Valid" and c.ttft_ms <= 1000 and c.per_request_tok_s >= 20]
        best = max(ok, key=lambda c: (c.total_tok_s, -c.concurrency), default=None)
        if best is None:
            return (3 if not cells else 2, 0.0, bundle.id)
        gpus = bundle.hardware.gpu_count
        return (0, -best.total_tok_s / gpus, bundle.id) if gpus else (1, -best.total_tok_s, bundle.id)
    return [b.id for b in sorted(bundles, key=key)]


def test_ranking_page_from_kept_standings_ranks_as_the_rule_on_whole_runs() -> None:
    bundles = ranking_runs()
    runs = sorted((ranked_run(b) for b in bundles), key=lambda r: r.id)
    standings = msgspec.json.decode(b"[" + b",".join(standing_record(r) for r in runs) + b"]", type=list[Standing])
    view = ranking_view(standings)
    assert (view.context, view.label, view.target, view.total) == (8192, "8K", CHAT.target, len(runs))
    assert view.contexts == [(8192, "8K"), (16384, "16K"), (32768, "32K"), (65536, "64K"), (131072, "128K"), (257024, "251K")]
    want = ranking(runs, 8192, CHAT.target)
    assert view.rows == want[:RANKING_SCREEN]
    assert [r.id for r in want] == chat_order(bundles, 8192)
    reasons = {r.reason for r in want}
    assert reasons == {None, "no cell meets both targets", "not measured at 8K"}  # every kind of row is tried
    assert {r.answer.per_gpu for r in want if r.answer} > {"—"}  # with and without a GPU count


def test_ranking_page_without_decode_cells_has_no_view() -> None:
    bundle = make_bundle("empty")
    bundle.decode = []
    assert ranking_view([msgspec.json.decode(standing_record(ranked_run(bundle)), type=Standing)]) is None


def test_ranking_chunks_of_kept_records_are_the_escaped_list_of_runs() -> None:
    runs = sorted((ranked_run(b) for b in ranking_runs()), key=lambda r: r.id) * 9  # more than one chunk
    chunks = [ranking_script(i, [chunk_record(r) for r in members]) for i, members in enumerate(ranking_chunks(runs))]
    encoded = [msgspec.json.encode(r).decode() for r in runs]
    assert chunks == [
        f"window.speedMatrixRanking({i},[{script_safe(','.join(encoded[start:start + RANKING_CHUNK]))}]);\n".encode()
        for i, start in enumerate(range(0, len(runs), RANKING_CHUNK))
    ]
    assert len(chunks) == 2 and b"<" not in chunks[0] and HOSTILE.encode() not in chunks[0]
    assert msgspec.json.decode(chunk_record(runs[0]), type=RankedRun) == runs[0]


def _cell(bundle: Bundle, context: int, concurrency: int):
    return next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == (context, concurrency))


def energy_answers(bundle: Bundle, by: str) -> dict[int, int | None]:
    """The rule by energy written out again from the cells: per context, of the Valid cells meeting the Chat
    target, the one with the best valid reading (ties to more tok/s), else the busiest; its concurrency."""
    found = {}
    for context in sorted({c.context_tokens for c in bundle.decode}):
        ok = [c for c in bundle.decode if c.context_tokens == context and c.status == "Valid" and c.ttft_ms <= 1000
              and c.per_request_tok_s >= 20]
        read = [c for c in ok if c.energy and c.energy.valid]
        def figure(c):
            watts = c.energy.mean_watts_per_gpu * c.energy.gpus / 1000
            return c.energy.joules_per_output_token if by == JOULES_PER_OUTPUT_TOKEN else -c.total_tok_s / watts
        best = min(read, key=lambda c: (figure(c), -c.total_tok_s)) if read else max(ok, key=lambda c: c.total_tok_s, default=None)
        found[context] = best.concurrency if best else None
    return found


@pytest.mark.parametrize("by", ["joules_per_output_token", "tok_s_per_kw"])
def test_by_energy_each_context_answers_with_the_qualifying_cell_of_the_best_valid_reading(tmp_path: Path, by: str) -> None:
    bundle = make_served_bundle()
    _cell(bundle, 8192, 4).energy.joules_per_output_token = 0.01  # the least energy a token, though not the busiest
    _cell(bundle, 8192, 16).status = "Valid"
    _cell(bundle, 8192, 16).energy.mean_watts_per_gpu = 1.0  # the most tok/s per kW
    path = tmp_path / "served.json"
    path.write_bytes(encode_bundle(bundle))
    code, output = _capacity(str(path), "--ttft-ms", "1000", "--min-tok-s-per-user", "20", "--by", by, "--json")
    assert code == 0, output
    got = json.loads(output)
    assert {g["context_tokens"]: g["concurrency"] for g in got} == energy_answers(bundle, by)
    assert got[0]["concurrency"] == (4 if by == JOULES_PER_OUTPUT_TOKEN else 16)
    assert got[0]["joules_per_output_token"] == _cell(bundle, 8192, got[0]["concurrency"]).energy.joules_per_output_token
    code, output = _capacity(str(path), "--ttft-ms", "1000", "--min-tok-s-per-user", "20", "--json")
    assert [g["concurrency"] for g in json.loads(output)][0] == 64, "by default, the busiest"


def test_the_table_shows_energy_where_the_run_has_readings_and_says_what_chose_the_cell() -> None:
    target = CHAT.target
    lines = text_table(make_served_bundle(), target, JOULES_PER_OUTPUT_TOKEN).splitlines()
    assert lines[2] == "Of the cells that meet both targets, the one with the fewest J per output token"
    assert re.split(r"\s{2,}", lines[4]) == ["Context", "Requests at once", "Total tok/s", "tok/s per GPU", "J per output token", "tok/s per kW"]
    plain = text_table(make_bundle(), target, JOULES_PER_OUTPUT_TOKEN)
    assert "J per output token" not in plain.splitlines()[4] and "has no valid energy readings" in plain
    assert "J per output token" not in text_table(make_bundle(), target)


def test_an_unknown_figure_to_choose_by_gets_one_error_line(bundles: dict[Path, Path]) -> None:
    code, output = _capacity(str(bundles[SEEDS[0]]), "--ttft-ms", "5", "--min-tok-s-per-user", "1", "--by", "watts")
    assert (code, output) == (1, "error: --by: must be one of tok_s_per_gpu, joules_per_output_token, tok_s_per_kw, got 'watts'\n")


def test_ranking_by_energy_puts_runs_with_a_reading_first_then_the_others_by_tok_s_per_gpu() -> None:
    bundles = [make_served_bundle(f"served-{i}", scale=1 + i / 4) for i in range(3)] + ranking_runs()[:12]
    _cell(bundles[2], 8192, 64).energy = msgspec.UNSET  # its best cell at the target has no reading now
    runs = sorted((ranked_run(b) for b in bundles), key=lambda r: r.id)
    ranked = ranking(runs, 8192, CHAT.target, JOULES_PER_OUTPUT_TOKEN)
    read = sorted((b for b in bundles[:3]), key=lambda b: min(c.energy.joules_per_output_token for c in b.decode
                                                              if c.context_tokens == 8192 and c.energy and c.energy.valid and c.status == "Valid"))
    assert [r.id for r in ranked[:3]] == [b.id for b in read]
    by_speed = [r.id for r in ranking(runs, 8192, CHAT.target) if not r.id.startswith("served-")]
    assert [r.id for r in ranked[3:]] == by_speed
    assert ranked[0].answer.joules.endswith(" J") and ranked[3].answer.joules == "—"
    standings = msgspec.json.decode(b"[" + b",".join(standing_record(r) for r in runs) + b"]", type=list[Standing])
    assert ranking_view(standings).energy and not ranking_view([s for s in standings if not s.id.startswith("served-")]).energy
