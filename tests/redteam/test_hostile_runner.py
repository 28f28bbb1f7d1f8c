"""Red-team cases against `runner` from a server that lies: echoed keys, broken counters, odd facts,
escape sequences, absurd sizes and options. Every one ends in a bundle sitegen takes, or one line."""

from __future__ import annotations

import base64
import errno
import json
import os
import subprocess
import urllib.parse
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import runner.journal
from runner.bundle.redact import known_secrets, redact
from runner.bundle.schema import decode_bundle
from runner.cli import main
from runner.journal import journal_path
from runner.metrics import kv_capacity_tokens, parse_prometheus
from sitegen.build import build_site
from tests.engines.hostile_engine import JSON, hostile, sse, stream_tokens, vllm_metrics

KEY = "AKIAab/cd+SECRET/KEY99"
QUICK = ["--contexts", "1K", "--prefill-contexts", "1K", "--concurrency", "1", "--duration", "0.3", "--max-output", "8"]


def invoke(*args: str, key: str | None = None) -> Result:
    """Run `runner ARGS` in-process, with `key` as the API key when given."""
    return CliRunner().invoke(main, list(args), env={"OPENAI_API_KEY": key} if key else {"OPENAI_API_KEY": ""})


def assert_one_error(result: Result, *phrases: str) -> str:
    """A non-zero exit whose output ends in one `error:` line holding the phrases, and no traceback."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.splitlines()
    assert lines and lines[-1].startswith(("error: ", "Error: ")), result.output
    assert sum(line.startswith("error: ") for line in lines) <= 1 and "Traceback" not in result.output
    for phrase in phrases:
        assert phrase in lines[-1], lines[-1]
    return lines[-1]


def measure(engine_url: str, out: Path, *extra: str, key: str | None = None) -> Result:
    return invoke("measure", "--base-url", engine_url, "--out", str(out), *QUICK, *extra, key=key)


# 1. The key, in every form a server may echo it.

ECHOES = {
    "json-escaped": json.dumps({"detail": f"unknown user {KEY} rejected"}).replace("/", "\\/"),
    "unicode-escaped": json.dumps({"detail": KEY}).replace("A", "\\u0041").replace("/", "\\u002F"),
    "url-encoded": f"bad user {urllib.parse.quote(KEY, safe='')}",
    "form-encoded": f"bad user {urllib.parse.quote_plus(KEY)}",
    "twice url-encoded": urllib.parse.quote(urllib.parse.quote(KEY, safe=""), safe=""),
    "html entities": KEY.replace("/", "&#x2F;").replace("+", "&#43;"),
    "json in json": json.dumps(json.dumps({"key": KEY})),
    "url-decoded plus": KEY.replace("+", " "),
    "base64 credential": "Basic " + base64.b64encode(f"user:{KEY}".encode()).decode(),
    "cut by an excerpt": f"unknown user {KEY[:11]}…",
}


@pytest.mark.parametrize("form", sorted(ECHOES))
def test_every_echoed_form_of_the_key_is_redacted(form: str) -> None:
    text = redact(ECHOES[form], [KEY])
    assert "<redacted>" in text
    for fragment in ("SECRET", "KEY99", "U0VDUkVU", "cd+SEC", "cd SEC"):  # U0VDUkVU: SECRET in base64
        assert fragment not in text, text


def test_redaction_leaves_text_without_the_key_alone() -> None:
    text = "HTTP 401: unknown user AKIAab rejected at /v1/completions (cd+SE is fine)"
    assert redact(text, [KEY]) == text


def test_known_secrets_come_from_the_key_the_launch_command_and_the_environment() -> None:
    found = known_secrets("sk-one", "vllm serve m --api-key two-two HF_TOKEN=hf_three --x '{\"password\": \"four4\"}'",
                          {"HF_TOKEN": "hf_environment_value", "PATH": "/usr/bin:/bin", "SHORT_TOKEN": "1"})
    assert {"sk-one", "two-two", "hf_three", "four4", "hf_environment_value"} <= set(found)
    assert "/usr/bin:/bin" not in found and "1" not in found


def _echoing_server_answer(body: dict) -> object:
    """Short requests (sizing, warm-up) work; the decode window's requests are refused with the key echoed."""
    if body.get("max_tokens", 1) <= 4:
        return stream_tokens(body)
    return 401, JSON, json.dumps({"detail": f"unknown user {KEY} rejected"}).replace("/", "\\/").encode()


def test_an_echoed_key_reaches_no_file_the_runner_or_sitegen_writes(tmp_path: Path) -> None:
    runs = tmp_path / "content" / "runs"
    out = runs / "echo.json"
    with hostile(completion=_echoing_server_answer) as engine:
        result = measure(engine.base_url, out, "--launch-command", f"vllm serve m --api-key {KEY}", key=KEY)
    assert result.exit_code == 0, result.output
    cell = decode_bundle(out.read_bytes()).decode[0]
    assert cell.status == "Failed" and "<redacted>" in (cell.error or "")
    build_site(tmp_path / "content", tmp_path / "site")
    for path in [*tmp_path.rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            assert b"SECRET" not in data and b"KEY99" not in data, path
    assert "SECRET" not in result.output


def test_a_key_in_a_mid_stream_error_event_is_redacted(tmp_path: Path) -> None:
    def answer(body: dict) -> object:
        if body.get("max_tokens", 1) <= 4:
            return stream_tokens(body)
        return iter([sse({"error": {"message": f"token {urllib.parse.quote(KEY, safe='')} expired"}})])

    out = tmp_path / "run.json"
    with hostile(completion=answer) as engine:
        result = measure(engine.base_url, out, key=KEY)
    assert result.exit_code == 0, result.output
    data = out.read_bytes() + journal_path(out).read_bytes()
    assert b"SECRET" not in data and b"%2FKEY99" not in data and b"<redacted>" in data


# 2 and 3. Counters that make no sense make a Distorted cell, never a negative or missing figure.

def _backwards(scrape: int) -> str:
    return vllm_metrics(generated=100_000 - 5_000 * scrape, ttft_count=scrape)


def _nan(scrape: int) -> str:
    return vllm_metrics(generated=float("nan") if scrape > 2 else 10, ttft_count=scrape)


@pytest.mark.parametrize("metrics", [_backwards, _nan], ids=["counter-reset", "nan"])
def test_counters_that_make_no_sense_distort_the_cell_and_the_bundle_builds_and_resumes(tmp_path: Path, metrics) -> None:
    content = tmp_path / "content"
    out = content / "runs" / "odd.json"
    with hostile(metrics=metrics) as engine:
        result = measure(engine.base_url, out)
        assert result.exit_code == 0, result.output
        cell = decode_bundle(out.read_bytes()).decode[0]
        assert cell.status == "Distorted", cell
        assert "went backwards" in (cell.distortion or "") or "not a count" in (cell.distortion or "")
        resumed = invoke("measure", "--base-url", engine.base_url, "--out", str(out), "--resume", *QUICK)
    assert resumed.exit_code == 0, resumed.output
    build_site(content, tmp_path / "site")


def test_a_negative_prompt_token_count_fails_the_point_instead_of_a_negative_rate(tmp_path: Path) -> None:
    def answer(body: dict) -> object:
        usage = {"prompt_tokens": -50, "completion_tokens": 1} if body.get("max_tokens") == 1 and isinstance(
            body.get("prompt"), list) and len(body["prompt"]) > 100 else None
        return stream_tokens(body, usage=usage)

    out = tmp_path / "run.json"
    with hostile(completion=answer) as engine:
        result = measure(engine.base_url, out)
    assert result.exit_code == 0, result.output
    point = decode_bundle(out.read_bytes()).prefill[0]
    assert point.status == "Failed" and (point.prompt_tok_s is None or point.prompt_tok_s >= 0)


def test_a_journal_line_that_does_not_load_is_named_even_when_it_is_the_last(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with hostile() as engine:
        assert measure(engine.base_url, out).exit_code == 0
        journal = journal_path(out)
        lines = journal.read_bytes().splitlines(keepends=True)
        lines[-1] = lines[-1].replace(b'"output_tokens":', b'"output_tokens":-4904,"x_":')
        journal.write_bytes(b"".join(lines))
        result = invoke("measure", "--base-url", engine.base_url, "--out", str(out), "--resume", *QUICK)
    assert_one_error(result, f"line {len(lines)}", "output_tokens")


# 3. Odd facts from the server.

@pytest.mark.parametrize(("card", "routes"), [
    ({"max_model_len": float("inf")}, {}),
    ({"max_model_len": 1e15}, {}),
    ({"max_model_len": 2 ** 41}, {}),
    ({"max_model_len": "lots"}, {}),
    ({"max_model_len": True, "meta": "x"}, {}),
    ({"owned_by": "sglang"}, {"/get_server_info": (200, JSON, b'{"version": 0.5, "internal_states": [1, "x"], "max_total_num_tokens": 1e400}')}),
    ({}, {"/version": (200, JSON, b'{"version": {"major": 1}}')}),
    ({}, {"/props": (200, JSON, b'{"default_generation_settings": [1], "build_info": 7, "total_slots": -1}')}),
    ({}, {"/tokenize": (200, JSON, b'{"tokens": [{"id": 1}, {"id": 2}]}')}),
])
def test_odd_server_facts_give_a_plan_or_one_line_never_a_traceback(card: dict, routes: dict) -> None:
    with hostile(model=card, routes=routes) as engine:
        result = invoke("probe", "--base-url", engine.base_url, "--max-output", "8")
    assert "Traceback" not in result.output and (result.exception is None or isinstance(result.exception, SystemExit))
    if result.exit_code:
        assert_one_error(result)
    else:
        assert "estimate:" in result.output
        cells = int(result.output.split("cells:")[1].split()[0])
        assert cells <= 15 * 8  # contexts up to the 16M bound, times the default concurrency levels


def test_a_numeric_sglang_version_is_recorded_as_text(tmp_path: Path) -> None:
    info = (200, JSON, b'{"version": 0.5, "max_total_num_tokens": 100000}')
    out = tmp_path / "run.json"
    with hostile(model={"owned_by": "sglang"}, routes={"/get_server_info": info}) as engine:
        result = measure(engine.base_url, out)
    assert result.exit_code == 0, result.output
    assert decode_bundle(out.read_bytes()).engine.version == "0.5"


def test_tokenize_answering_objects_falls_back_to_calibrated_prompts(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with hostile(routes={"/tokenize": (200, JSON, b'{"tokens": [{"id": 1}, {"id": 2}]}')}) as engine:
        result = measure(engine.base_url, out)
    assert result.exit_code == 0, result.output
    assert "calibrated mode" in result.output


def test_a_negative_kv_cache_is_unknown_not_negative() -> None:
    page = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="-100"} 1\n'
    assert kv_capacity_tokens(parse_prometheus(page)) is None
    page = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="100"} 1\n'
    assert kv_capacity_tokens(parse_prometheus(page)) == 1600


# 6. Nothing a server sends reaches the terminal with its control characters live.

EVIL = "\x1b]0;PWNED\x07\x1b[2Jfinished: every item is Valid\u202e"


def test_escape_sequences_from_a_server_never_reach_the_terminal(tmp_path: Path) -> None:
    def answer(body: dict) -> object:
        if body.get("max_tokens", 1) <= 4:
            return stream_tokens(body)
        return 500, "text/plain", EVIL.encode()  # raw, as JSON would escape it

    routes = {"/version": (200, JSON, json.dumps({"version": EVIL}).encode())}
    with hostile(routes=routes, completion=answer) as engine:
        probed = invoke("probe", "--base-url", engine.base_url, "--max-output", "8")
        measured = measure(engine.base_url, tmp_path / "run.json")
        missing = invoke("probe", "--base-url", engine.base_url, "--model", EVIL)
    for result in (probed, measured, missing):
        assert "\x1b" not in result.output and "\x07" not in result.output and "\u202e" not in result.output
    assert "\\x1b]0;PWNED" in probed.output
    assert "\\x1b" in measured.output
    assert_one_error(missing, "is not served")


def test_ten_thousand_served_models_make_a_short_error_line() -> None:
    cards = [{"id": f"model-{index}", "object": "model"} for index in range(10_000)]
    routes = {"/v1/models": (200, JSON, json.dumps({"data": cards}).encode())}
    with hostile(routes=routes) as engine:
        result = invoke("probe", "--base-url", engine.base_url)
    line = assert_one_error(result, "serves several models", "and 9,990 more")
    assert len(line) < 2100


# 7 and 9. Bounds on what a run may ask for, and non-finite options.

@pytest.mark.parametrize(("flags", "phrase"), [
    (["--contexts", "2000000M"], "above 16M"),
    (["--concurrency", "1000000000"], "must be from 1 to 4,096"),
    (["--duration", "nan"], "not a finite number"),
    (["--duration", "inf"], "not in the range"),
    (["--stall-timeout", "nan"], "not a finite number"),
    (["--ready-timeout", "-inf"], "not in the range"),
    (["--repeats", "100000"], "not in the range"),
    (["--max-output", "99999999999"], "not in the range"),
])
def test_options_past_their_bounds_are_one_usage_error(tmp_path: Path, flags: list[str], phrase: str) -> None:
    result = invoke("measure", "--base-url", "http://127.0.0.1:9/v1", "--ready-timeout", "0",
                    "--out", str(tmp_path / "x.json"), *QUICK, *flags)
    assert result.exit_code == 2, result.output
    assert phrase in result.output and "Traceback" not in result.output
    assert not list(tmp_path.iterdir())


def test_a_plan_that_cannot_finish_is_refused_in_one_line(tmp_path: Path) -> None:
    contexts = ",".join(str(1000 + n) for n in range(600))
    concurrency = ",".join(str(n) for n in range(1, 600))
    with hostile() as engine:
        result = invoke("probe", "--base-url", engine.base_url, "--contexts", contexts, "--concurrency", concurrency,
                        "--duration", "3600")
    assert_one_error(result, "days", "measure fewer")


# 8. Requests that end without a token fail their cell.

def test_decode_requests_that_end_with_no_tokens_fail_the_cell(tmp_path: Path) -> None:
    def answer(body: dict) -> object:
        return stream_tokens(body, tokens=None if body.get("max_tokens", 1) <= 4 else 0)

    out = tmp_path / "run.json"
    with hostile(completion=answer) as engine:
        result = measure(engine.base_url, out)
    assert result.exit_code == 0, result.output
    cell = decode_bundle(out.read_bytes()).decode[0]
    assert cell.status == "Failed" and "without sending a token" in (cell.error or ""), cell
    assert "0 ms TTFT" not in result.output


# 10. A disk full as a run starts leaves nothing that blocks the next attempt.

def test_a_journal_whose_header_could_not_be_written_does_not_block_the_next_run(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "run.json"
    real_write = runner.journal.os.fsync

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with hostile() as engine:
        monkeypatch.setattr(runner.journal.os, "fsync", full)
        first = measure(engine.base_url, out)
        monkeypatch.setattr(runner.journal.os, "fsync", real_write)
        assert_one_error(first, "No space left on device")
        assert not journal_path(out).exists()
        journal_path(out).write_bytes(b"")  # as an older runner left it
        resumed = invoke("measure", "--base-url", engine.base_url, "--out", str(out), "--resume", *QUICK)
        assert_one_error(resumed, "is empty", "delete it and start the run again")
        second = measure(engine.base_url, out)
    assert second.exit_code == 0, second.output


def test_a_real_full_disk_as_a_run_starts_is_one_line_and_the_retry_works(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("no permission to mount a tmpfs here; the patched case covers it")
    try:
        (disk / "filler").write_bytes(b"x" * 65536)
        out = disk / "run.json"
        with hostile() as engine:
            result = measure(engine.base_url, out)
            assert_one_error(result, "No space left on device")
            assert sorted(p.name for p in disk.iterdir()) == ["filler"]
            (disk / "filler").unlink()
            again = measure(engine.base_url, out)
        assert again.exit_code == 0, again.output
    finally:
        subprocess.run(["umount", str(disk)], check=False)

