"""Red-team cases against what bundles and imported files say: impossible figures from other tools, dates in
the future, escape sequences and direction controls in names, names whose pages collided."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.bundle.schema import decode_bundle
from sitegen.cli import main
from sitegen.content.loader import check_bundle
from sitegen.errors import InputError
from sitegen.importers import guidellm
from sitegen.slug import PAGE_SLUG_MAX, slugify
from tests.builders import FIXTURES, serve_folder
from tests.sample_site import MIMO, sample_document


def _first(pattern: str) -> Path:
    """The first of a tool's files in the fixtures."""
    return sorted(FIXTURES.glob(pattern))[0]


def _edited(tmp_path: Path, source: Path, edit: Callable[[dict], None]) -> Path:
    """A copy of a tool's file with one edit, written by Python's json (which writes NaN and Infinity as the tools do)."""
    document = json.loads(source.read_text())
    edit(document)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    return path


def _set(*steps: str | int, value: object) -> Callable[[dict], None]:
    """An edit setting the value at steps."""
    def edit(document: dict) -> None:
        target = document
        for step in steps[:-1]:
            target = target[step]
        target[steps[-1]] = value
    return edit


VLLM, GUIDELLM = "peers/vllm/held-back/*.json", "peers/guidellm/held-back/*.json"
AIPERF, LLM_INFERENCE_BENCH = "peers/aiperf/held-back/*/profile_export_aiperf.json", "llm-inference-bench-*.json"
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(("tool", "edit", "where", "message"), [
    (VLLM, _set("median_ttft_ms", value=NAN), "$.median_ttft_ms", "not a finite number (nan)"),
    (VLLM, _set("output_throughput", value=INF), "$.output_throughput", "not a finite number (inf)"),
    (VLLM, _set("failed", value=-5), "$.failed", "expected a whole number >= 0, got -5"),
    (VLLM, _set("failed", value=5), "$.failed", "5 failed requests, more than num_prompts"),
    (VLLM, _set("completed", value=10**6), "$.completed", "more than num_prompts"),
    (VLLM, _set("median_tpot_ms", value=5e-324), "$.median_tpot_ms", "too short to be a time"),
    (VLLM, _set("max_concurrency", value=0), "$.max_concurrency", "expected a whole number >= 1, got 0"),
    (VLLM, _set("model_id", value=""), "$.model_id", "expected a string of length >= 1"),
    (VLLM, _set("model_id", value="a\ud800b"), "$.model_id", "a lone UTF-16 surrogate ('a\\ud800b'): not text"),
    (VLLM, _set("x\udc00", value=1), "$.x\\udc00", "a lone UTF-16 surrogate"),
    (GUIDELLM, _set("benchmarks", 1, "metrics", "time_to_first_token_ms", "successful", "median", value=NAN),
     "$.benchmarks[1].metrics.time_to_first_token_ms.successful.median", "not a finite number (nan)"),
    (GUIDELLM, _set("benchmarks", 0, "metrics", "request_totals", "errored", value=-5),
     "$.benchmarks[0].metrics.request_totals.errored", "expected a whole number >= 0, got -5"),
    (GUIDELLM, _set("benchmarks", 0, "metrics", "inter_token_latency_ms", "successful", "percentiles", "p99", value=-1.0),
     "$.benchmarks[0].metrics.inter_token_latency_ms.successful.percentiles.p99", "expected a number >= 0.0, got -1.0"),
    (AIPERF, _set("time_to_first_token", "p50", value=NAN), "$.time_to_first_token.p50", "not a finite number (nan)"),
    (AIPERF, _set("output_token_throughput", value={"avg": -INF}), "$.output_token_throughput.avg", "not a finite number (-inf)"),
    (AIPERF, _set("error_request_count", value={"avg": -5.0}), "$.error_request_count.avg", "expected a number >= 0.0, got -5.0"),
    (AIPERF, _set("error_request_count", value={"avg": 5.0}), "$.request_count.avg", "but the profiling phase ran"),
    (AIPERF, _set("request_count", value={"avg": 2.5}), "$.request_count.avg", "expected a whole number of requests, got 2.5"),
    (LLM_INFERENCE_BENCH, _set("results", 0, "ttft_p50", value=NAN), "$.results[0].ttft_p50", "not a finite number (nan)"),
    (LLM_INFERENCE_BENCH, _set("results", 0, "num_errors", value=-5), "$.results[0].num_errors", "expected a whole number >= 0, got -5"),
])
def test_impossible_figures_are_one_line_naming_the_files_own_field(
        tool: str, edit: Callable[[dict], None], where: str, message: str, tmp_path: Path) -> None:
    path = _edited(tmp_path, _first(tool), edit)
    result = CliRunner().invoke(main, ["import", "--out", str(tmp_path / "runs"), str(path)])
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {path}:{where}: ") and message in result.output, result.output
    assert result.output.count("\n") == 1
    assert not (tmp_path / "runs").exists()


# A date in the future (finding: a measured_at in year 9999 pinned a run to the top of the index and the feed).

def _content(tmp_path: Path, *documents: dict) -> Path:
    """A content folder holding the bundles."""
    runs = tmp_path / "content" / "runs"
    runs.mkdir(parents=True)
    for document in documents:
        (runs / f"{document['id']}.json").write_text(json.dumps(document))
    return tmp_path / "content"


def _seed(**changes: object) -> dict:
    """The undated sample run MIMO with top-level changes."""
    return {**sample_document(MIMO), **changes}


def _stamp(moment: dt.datetime) -> str:
    """A bundle's measured_at."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("ahead", [dt.timedelta(days=2), dt.timedelta(days=365 * 7000)])
def test_a_build_refuses_a_measured_at_in_the_future(tmp_path: Path, ahead: dt.timedelta) -> None:
    content = _content(tmp_path, _seed(id="honest"), _seed(id="pinned", measured_at=_stamp(dt.datetime.now(dt.timezone.utc) + ahead)))
    result = CliRunner().invoke(main, ["build", "--content", str(content), "--out", str(tmp_path / "site")])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"error: {content / 'runs' / 'pinned.json'}:$.measured_at: ") and "in the future" in result.output
    assert not (tmp_path / "site").exists()


def test_a_clock_a_little_ahead_is_allowed_and_now_is_injectable() -> None:
    bundle = decode_bundle(json.dumps(_seed(id="x", measured_at="2030-01-02T00:00:00Z")).encode())
    day = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    check_bundle(bundle, Path("x.json"), now=day)  # a day ahead: clock skew, a local time taken as UTC
    with pytest.raises(InputError) as caught:
        check_bundle(bundle, Path("x.json"), now=day - dt.timedelta(seconds=1))
    assert caught.value.where == "$.measured_at"


@pytest.mark.parametrize(("tool", "edit", "where"), [
    (VLLM, _set("date", value="99990101-000000"), "$.date"),
    (GUIDELLM, _set("benchmarks", 0, "start_time", value=253_000_000_000.0), "$.benchmarks[0].start_time"),
    (AIPERF, _set("start_time", value="9999-01-01T00:00:00"), "$.start_time"),
])
def test_an_import_dated_in_the_future_is_refused_at_the_files_field(
        tool: str, edit: Callable[[dict], None], where: str, tmp_path: Path) -> None:
    path = _edited(tmp_path, _first(tool), edit)
    result = CliRunner().invoke(main, ["import", "--out", str(tmp_path / "runs"), str(path)])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"error: {path}:{where}: ") and "in the future" in result.output
    assert not (tmp_path / "runs").exists()


# Escape sequences (finding: a file's names reached the terminal and index.txt with their control characters live).

ESCAPES = "\x1b[2J\x1b]0;owned\x07\x9b31m\u202e"
LIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # tab and line feed are structure


def _escaping(run_id: str) -> dict:
    """The seed with escape sequences in its model, GPU, engine, submitter and launch command."""
    document = _seed(id=run_id, model=f"M{ESCAPES}", submitter=f"@s{ESCAPES}", launch_command=f"vllm serve {ESCAPES}")
    document["hardware"]["gpu"] = f"G{ESCAPES}"
    document["engine"]["version"] = f"1{ESCAPES}"
    return document


def test_text_outputs_carry_no_live_control_character(tmp_path: Path) -> None:
    content = _content(tmp_path, _seed(id="plain", measured_at="2026-09-01T00:00:00Z"), _escaping("escaping"))
    result = CliRunner().invoke(main, ["build", "--content", str(content), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "site" / "runs" / "escaping" / "index.txt").read_text()
    assert LIVE.search(text) is None and "M\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202e\\u2069 on \\u2068G\\x1b" in text
    feed = (tmp_path / "site" / "feed.xml").read_text()
    assert LIVE.search(feed) is None and "@s\\x1b[2J" in feed
    capacity = CliRunner().invoke(main, ["capacity", str(content / "runs" / "escaping.json"), "--ttft-ms", "1000", "--min-tok-s-per-user", "1"])
    assert capacity.exit_code == 0 and LIVE.search(capacity.output) is None and capacity.output.startswith("\\u2068M\\x1b[2J")


def test_error_lines_show_escapes_and_stay_short(tmp_path: Path) -> None:
    content = _content(tmp_path)
    (content / "runs" / f"bad{ESCAPES}.json").write_text(json.dumps(_seed(id="x" * 50_000 + ESCAPES)))
    result = CliRunner().invoke(main, ["build", "--content", str(content), "--out", str(tmp_path / "site")])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output[:300]
    assert LIVE.search(result.output) is None and "bad\\x1b[2J" in result.output and len(result.output) < 2_100


def _lean(benchmark: dict) -> dict:
    """A GuideLLM benchmark cut to what the importer reads (a real one is 120 KB)."""
    def stats(found: dict) -> dict:
        return {**{k: found[k] for k in ("mean", "median", "count", "total_sum")},
                "percentiles": {k: found["percentiles"][k] for k in ("p90", "p99")}}

    found = benchmark["metrics"]
    metrics = {f.name: {status: stats(found[f.name][status]) for status in ("successful", "total")}
               for f in msgspec.structs.fields(guidellm.Metrics) if f.name != "request_totals"}
    config = {"strategy": benchmark["config"]["strategy"], "backend": {"model": ""}}
    return {"type_": benchmark["type_"], "config": config, "start_time": benchmark["start_time"],
            "duration": benchmark["duration"], "metrics": {**metrics, "request_totals": found["request_totals"]}}


def test_a_file_of_many_models_is_one_short_line(tmp_path: Path) -> None:
    def many_models(document: dict) -> None:
        template = json.dumps(_lean(document["benchmarks"][0]))
        document["benchmarks"] = [json.loads(template) for _ in range(3_000)]
        for i, benchmark in enumerate(document["benchmarks"]):
            benchmark["config"]["backend"]["model"] = f"model-{i:05d}{ESCAPES}"

    path = _edited(tmp_path, _first(GUIDELLM), many_models)
    result = CliRunner().invoke(main, ["import", "--out", str(tmp_path / "runs"), str(path)])
    assert result.exit_code == 1 and result.output.count("\n") == 1 and len(result.output) < 500, result.output[:600]
    assert LIVE.search(result.output) is None and "and 2,998 more" in result.output


# Direction controls (finding: an unclosed right-to-left override in one model's name reversed the names after it).

OVERRIDE = "Beta\u202e"  # a right-to-left override its name never closes
STRAY = "0.11\u2069\u202e"  # a PDI of its own first, to close the fence around it early, then an override
HEBREW = "\u05e9\u05dc\u05d5\u05dd"


@pytest.fixture(scope="module")
def bidi_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs of Alpha, Beta (an open override in its model, submitter and engine version), Gamma, and a Hebrew model
    without a GPU count (so the index lists it as left out of the chart)."""
    tmp_path = tmp_path_factory.mktemp("bidi")
    runs = [_seed(id=run_id, model=model, measured_at=f"2026-09-0{day}T00:00:00Z")
            for day, (run_id, model) in enumerate((("alpha", "Alpha"), ("beta", OVERRIDE), ("gamma", "Gamma"), ("hebrew", HEBREW)), 1)]
    runs[1]["submitter"] = f"@{OVERRIDE}"
    runs[1]["engine"]["version"] = STRAY
    runs[3]["hardware"]["gpu_count"] = None
    content = _content(tmp_path, *runs)
    result = CliRunner().invoke(main, ["build", "--content", str(content), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    return tmp_path / "site"


def _page(site: Path, path: str) -> str:
    """A page of the site, as text."""
    return (site / path).read_text()


def test_names_beside_other_text_are_isolated_in_html(bidi_site: Path) -> None:
    index = _page(bidi_site, "index.html")
    assert f'<a href="models/{slugify(OVERRIDE)}/index.html"><bdi>{OVERRIDE}</bdi></a> · ' in index  # Browse
    assert f'<bdi>{HEBREW}</bdi>.</p>' in index  # left out of the chart
    assert f'index.html"><bdi>{OVERRIDE}</bdi></a></td>' in index  # the runs table
    model = _page(bidi_site, f"models/{slugify(OVERRIDE)}/index.html")
    assert f"<h1><bdi>\u2068{OVERRIDE}\u2069</bdi></h1>" in model and f"every run of <bdi>{OVERRIDE}</bdi>. 1 run" in model
    assert f"<title>\u2068{OVERRIDE}\u2069 · speed-matrix</title>" in model
    compare = next(bidi_site.glob("compare/*beta*.html")).read_text()
    assert compare.count(f"<bdi>\u2068{OVERRIDE}\u2069 on H200 NVL 141GB ×2</bdi>") == 6


def test_a_name_with_direction_controls_is_fenced_in_composed_lines(bidi_site: Path) -> None:
    run = _page(bidi_site, "runs/beta/index.html")
    assert f"<h1>\u2068{OVERRIDE}\u2069 on H200 NVL 141GB ×2</h1>" in run
    assert f"<bdi>by \u2068@{OVERRIDE}\u2069</bdi>" in run
    assert f"vllm · \u2068\u2068{STRAY}\u2069 · MXFP4+FP8" in run  # its stray PDI closes the extra FSI, the last PDI the rest


def test_plain_names_are_printed_as_before(bidi_site: Path) -> None:
    run = _page(bidi_site, "runs/alpha/index.html")
    assert "<h1>Alpha on H200 NVL 141GB ×2</h1>" in run and "<bdi>" not in run.split('<section class="panel" aria-label="Compare">')[0]


def _reads_left_to_right(page: object, text: str, within: str = "body") -> bool | None:
    """Whether the first and last letters of `text`, in the first text node under `within` holding it whole,
    are drawn left to right; None when there is none."""
    return page.evaluate("""([word, within]) => {
        const walker = document.createTreeWalker(document.querySelector(within), NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const at = node.data.indexOf(word);
            if (at < 0) continue;
            const range = document.createRange();
            const left = (i) => { range.setStart(node, at + i); range.setEnd(node, at + i + 1); return range.getBoundingClientRect().left; };
            return left(0) < left(word.length - 1);
        }
        return null;
    }""", [text, within])


@pytest.mark.browser
def test_an_open_override_reverses_nothing_after_its_name(page: object, bidi_site: Path) -> None:
    server = serve_folder(bidi_site)
    base = next(server)
    try:
        page.goto(base + "index.html")
        assert _reads_left_to_right(page, "Gamma", "section.panel p:has(strong)") is True  # Browse: the model after Beta
        page.click("#runs-table th[data-key=model] button")  # rows drawn by runs.js
        page.wait_for_selector("#runs-table[aria-busy=false]")
        assert page.text_content("#runs-table tr[data-id=beta] td:nth-child(2) bdi") == OVERRIDE
        page.goto(base + f"models/{slugify(OVERRIDE)}/index.html")
        assert _reads_left_to_right(page, ". 1 run of 1 model") is True
        page.goto(base + "runs/beta/index.html")
        assert _reads_left_to_right(page, " on H200 NVL 141GB") is True
        assert _reads_left_to_right(page, " · MXFP4+FP8") is True
        page.goto(base + "compare/index.html#runs=beta,alpha")
        page.wait_for_selector("#picker table.matrix")
        assert page.text_content("#picker-choices li:first-child .choice-title bdi") == OVERRIDE
        assert page.console_errors == []
    finally:
        server.close()


# Slugs (finding: names cut at 80 characters or transliterated alike shared one model or GPU page).

LONG = "acme-research-frontier-instruct-" * 3
COLLIDING = [
    (LONG + "release-v1", LONG + "release-v2"),  # alike for 80 characters
    ("Model B", "Модель Б"),  # transliterated alike
    ("Model B", "Mоdel B"),  # a Cyrillic о
    ("Model B", "Ｍodel B"),  # a fullwidth Ｍ
    ("C", "C++"), ("Qwen/Qwen3-8B", "Qwen-Qwen3-8B"), ("a-b", "a--b"), ("Run", " "),  # punctuation, blanks
    ("Beta", "Beta\u202e"),  # a direction control
]


@pytest.mark.parametrize(("first", "second"), COLLIDING)
def test_names_that_collided_get_pages_of_their_own(first: str, second: str) -> None:
    assert slugify(first) != slugify(second)
    assert {len(slugify(first)), len(slugify(second))} <= set(range(1, PAGE_SLUG_MAX + 1))
    assert re.fullmatch(r"[a-z0-9]+(?:--?[a-z0-9]+)*", slugify(second))


def test_a_name_spelled_as_another_names_hashed_slug_gets_its_own() -> None:
    taken = slugify("Модель Б")
    assert slugify(taken) != taken and slugify(taken.upper()) != taken


def test_plain_names_keep_their_readable_slugs() -> None:
    assert [slugify(name) for name in ("Ling-3.0-flash-fp4", "MiMo-V2.6-Flash-RL", "H200 NVL", "h200_nvl")] == [
        "ling-3-0-flash-fp4", "mimo-v2-6-flash-rl", "h200-nvl", "h200-nvl"]


_WORD = st.text("aB3-. _", min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.one_of(_WORD, st.text(max_size=12), st.builds("".join, st.lists(_WORD, max_size=20))),
                      min_size=2, max_size=12, unique=True))
def test_a_page_slug_is_one_to_each_name_but_for_case_and_separators(names: list[str]) -> None:
    def same_words(name: str) -> str:
        return re.sub("[ ._-]", "-", name.lower())

    by_slug: dict[str, str] = {}
    for name in names:
        other = by_slug.setdefault(slugify(name), name)
        assert other == name or same_words(other) == same_words(name), (other, name)
        assert len(slugify(name)) <= PAGE_SLUG_MAX


def test_a_build_gives_each_colliding_model_and_gpu_its_page(tmp_path: Path) -> None:
    runs = []
    for i, name in enumerate(dict.fromkeys(name for pair in COLLIDING[:4] for name in pair)):
        run = _seed(id=f"run-{i}", model=name, measured_at=f"2026-08-0{i + 1}T00:00:00Z")
        run["hardware"]["gpu"] = name
        runs.append(run)
    content = _content(tmp_path, *runs)
    result = CliRunner().invoke(main, ["build", "--content", str(content), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    for run in runs:
        for folder in ("models", "gpus"):
            page = (tmp_path / "site" / folder / slugify(run["model"]) / "index.html").read_text()
            assert "1 run of 1 model on 1 GPU type" in page and f"runs/{run['id']}/" in page


@pytest.mark.parametrize(("flags", "phrase"), [
    (["--vram-per-gpu-gb", "nan"], "--vram-per-gpu-gb: not a finite number"),
    (["--vram-per-gpu-gb", "inf"], "--vram-per-gpu-gb: not a finite number"),
    (["--vram-per-gpu-gb", "-1"], "--vram-per-gpu-gb: expected a number >= 0"),
    (["--gpu-count", "0"], "--gpu-count: expected a whole number >= 1"),
])
def test_import_flags_a_bundle_cannot_hold_are_named_as_flags(tmp_path: Path, flags: list[str], phrase: str) -> None:
    seed = sorted((FIXTURES / "seeds").iterdir())[0]
    result = CliRunner().invoke(main, ["import", "--out", str(tmp_path / "runs"), str(seed), *flags])
    assert result.exit_code != 0 and result.output.startswith(f"error: {phrase}"), result.output
    assert len(result.output.splitlines()) == 1 and not (tmp_path / "runs").exists()
