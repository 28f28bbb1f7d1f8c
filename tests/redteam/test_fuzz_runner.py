"""The fuzzing corpus, grown to the runner's inputs: generated command lines and generated server answers.

Whatever comes in, `runner` ends with its output or with `error:` lines (click's usage errors for
malformed options), never a traceback, and never hangs past its timeouts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cli import main
from tests.builders import FIGURES, NASTY_STRINGS
from tests.engines.scripted_server import JSON, chunk, scripted

FUZZ = settings(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TRIED = {"command lines": 0, "server answers": 0, "ran": 0, "errors": 0}
JUNK = st.one_of(st.sampled_from(NASTY_STRINGS), st.text(max_size=12),
                 st.sampled_from(["0", "-1", "1e309", "nan", "99999999999999999999", "8K,,16K", "1K,2K", "0.1", "http://[::1"]))
OPTIONS = ["--contexts", "--prefill-contexts", "--concurrency", "--duration", "--max-output", "--kv-capacity", "--model",
           "--stall-timeout", "--ready-timeout", "--launch-command", "--base-url", "--api-key-env"]
METADATA = ["--id", "--model-name", "--gpu-count", "--vram-per-gpu-gb", "--gpu", "--engine-name", "--submitter"]


def _settled(result: Result) -> None:
    """The property: no traceback; a failure is click's usage error (2) or `error:` lines (1)."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 1:
        assert result.output.splitlines()[-1].startswith("error: "), result.output
        TRIED["errors"] += 1
    elif result.exit_code == 2:
        assert "Error:" in result.output or result.output.startswith("error: "), result.output
        TRIED["errors"] += 1
    else:
        assert result.exit_code == 0, result.output
        TRIED["ran"] += 1


@settings(FUZZ, max_examples=100)
@given(pairs=st.lists(st.tuples(st.sampled_from(OPTIONS + METADATA), JUNK), max_size=5), command=st.sampled_from(["probe", "measure"]))
def test_generated_command_lines_never_trace_back(tmp_path: Path, pairs: list[tuple[str, str]], command: str) -> None:
    args = [command, "--base-url", "http://127.0.0.1:9/v1", "--ready-timeout", "0"]
    for option, value in pairs:
        if command == "probe" and option in METADATA:
            continue
        args += [option, value]
    if command == "measure":
        args += ["--out", str(tmp_path / "fuzz" / "run.json")]
    TRIED["command lines"] += 1
    _settled(CliRunner().invoke(main, args))


MODEL_LISTS = st.one_of(
    st.just(json.dumps({"data": [{"id": "scripted", "max_model_len": 4096}]})),
    st.builds(lambda d: json.dumps({"data": d}), st.lists(st.one_of(st.integers(), st.text(max_size=4), st.none(),
                                                                    st.fixed_dictionaries({"id": st.one_of(st.text(max_size=6), st.integers())})), max_size=3)),
    st.sampled_from(["[]", "null", "{", "", '{"data": {}}', '{"data": [{"id": "scripted", "max_model_len": -5}]}']),
)
PIECES = st.sampled_from([chunk("x"), chunk("", "length"), b"data: [DONE]\n\n", b": keepalive\n\n", b"data: {bad\n\n",
                          b'data: {"choices": 5}\n\n', b'data: {"error": {"message": "boom"}}\n\n', b"\xff\xfe\n", b"x" * 300,
                          b'data: {"choices":[{"text":"y"}],"usage":{"completion_tokens":-4}}\n\n', b"\n"])


@settings(FUZZ, max_examples=40)
@given(models=MODEL_LISTS, version=st.sampled_from([b'{"version": "0.9"}', b"[]", b"junk", b'{"version": 5}']),
       stream=st.lists(PIECES, max_size=8), command=st.sampled_from(["probe", "measure"]))
def test_generated_server_answers_never_trace_back(tmp_path: Path, models: str, version: bytes, stream: list[bytes],
                                                   command: str) -> None:
    def streamed() -> Iterator[bytes]:
        yield from stream

    answers = {"/v1/models": (200, JSON, models.encode()), "/version": (200, JSON, version), "/v1/completions": streamed}
    out = tmp_path / "answers" / "run.json"
    out.parent.mkdir(exist_ok=True)
    for old in out.parent.iterdir():
        old.unlink()
    TRIED["server answers"] += 1
    with scripted(answers) as server:
        output = ["--out", str(out)] if command == "measure" else []
        result = CliRunner().invoke(main, [command, "--base-url", server.base_url, "--ready-timeout", "0.1",
                                           "--stall-timeout", "0.3", *output, "--contexts", "1K",
                                           "--prefill-contexts", "1K", "--concurrency", "1", "--duration", "0.2",
                                           "--max-output", "8"])
    _settled(result)


@pytest.fixture(scope="module", autouse=True)
def report_inputs_tried() -> Iterator[None]:
    """After the module: how many generated runner inputs the property was checked against."""
    yield
    if TRIED["command lines"] or TRIED["server answers"]:
        FIGURES.append(f"runner fuzz: {TRIED['command lines']} generated command lines and {TRIED['server answers']} generated "
                       f"server answers tried, no traceback; {TRIED['ran']} ran through and {TRIED['errors']} gave clear error lines")
