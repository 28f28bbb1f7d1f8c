"""The `runner` command line: one `error:` line for bad input, the version, and help that tells the defaults."""

from __future__ import annotations

import importlib.metadata
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner, Result

from runner.cli import main
from runner.simulator import Faults, SimConfig
from runner.simulator.config import decode_config

# A run small enough to finish in about a second, should a check let it start.
QUICK = ["--contexts", "1K", "--prefill-contexts", "1K", "--concurrency", "1", "--duration", "0.2", "--max-output", "8"]


def invoke(*args: str) -> Result:
    """Run `runner ARGS` in-process, as a user would from the shell."""
    return CliRunner().invoke(main, list(args))


def one_line(text: str) -> str:
    """Click's help with its wrapping undone, so phrases can be found whole."""
    return re.sub(r"\s+", " ", text)


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that a real listening socket holds for the test."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize("mode", [["--serve-only"], QUICK], ids=["serve-only", "measure"])
def test_busy_port_is_one_line(busy_port: int, tmp_path: Path, mode: list[str]) -> None:
    result = invoke("simulate", "--port", str(busy_port), "--out", str(tmp_path / "run.json"), *mode)
    assert result.exit_code == 1
    assert result.output == f"error: port {busy_port} on 127.0.0.1 is in use; pass --port\n"
    assert not (tmp_path / "run.json").exists()


@pytest.mark.parametrize(("text", "expected"), [
    ('{"nosuchfield": 1}', "$.nosuchfield: unknown field"),
    ('{"faults": {"stal_s": 2}}', "$.faults.stal_s: unknown field"),
    ('{"base_step_ms": "fast"}', "$.base_step_ms: expected a number"),
    ('{"faults": {"error_status": 200}}', "$.faults.error_status: expected a whole number >= 400"),
    ('{"eos_after_tokens": "x"}', "$.eos_after_tokens: expected a whole number or null"),
    ("[]", "$: expected an object"),
    ('{"base_step_ms" 1}', "1:17: invalid JSON: expected ':'"),
    ('{"max_model_len": 99999999}', "$: max_model_len (99999999) exceeds the KV cache (65536 blocks of 16); "
                                    "it could not hold one request"),
    ('{"token_log": "/no/such/folder/tokens.jsonl"}', "$.token_log: no folder '/no/such/folder' to write the log in"),
])
def test_bad_sim_config_names_file_and_field(tmp_path: Path, text: str, expected: str) -> None:
    config = tmp_path / "bad.json"
    config.write_text(text)
    result = invoke("simulate", "--sim-config", str(config), "--out", str(tmp_path / "run.json"), *QUICK)
    # The form sitegen's errors take too: file:where: message.
    assert (result.exit_code, result.output) == (1, f"error: {config}:{expected}\n")


def test_sim_config_round_trips_as_plain_faults() -> None:
    """A written SimConfig reads back equal, its faults the same Faults the server compares against."""
    config = SimConfig(max_model_len=4096, faults=Faults(stall_after_tokens=3, stall_s=0.5))
    assert decode_config(msgspec.json.encode(config)) == config


@pytest.mark.parametrize(("option", "value"), [("--concurrency", "1,,4"), ("--contexts", "8K,,16K"),
                                               ("--prefill-contexts", "8K,")])
def test_empty_list_items_are_rejected(option: str, value: str) -> None:
    result = invoke("probe", option, value, "--base-url", "http://127.0.0.1:9/v1", "--ready-timeout", "0")
    assert result.exit_code == 2
    assert f"Invalid value for '{option}': empty item in {value!r}" in result.output
    assert "did not become ready" not in result.output


def test_version_is_the_installed_distribution() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip().endswith(f"version {importlib.metadata.version('speed-matrix')}")


@pytest.mark.parametrize("command", ["probe", "measure", "simulate"])
def test_help_tells_the_list_defaults(command: str) -> None:
    text = one_line(invoke(command, "--help").output)
    assert ("--contexts TEXT Decode contexts, e.g. 8K,16K or token counts (default: powers of two from 8K below "
            "the usable maximum, then the usable maximum = max model length − max output − 1K).") in text
    assert "--prefill-contexts TEXT Prefill contexts (default: the decode contexts plus the max model length)." in text


def test_simulate_offers_no_option_the_simulator_decides() -> None:
    decided = ["--base-url", "--model ", "--api-key-env", "--ready-timeout"]
    simulate, measure = invoke("simulate", "--help").output, invoke("measure", "--help").output
    assert [flag for flag in decided if flag in simulate] == []
    assert [flag for flag in decided if flag not in measure] == []
    result = invoke("simulate", "--base-url", "http://127.0.0.1:8000/v1")
    assert result.exit_code == 2 and "No such option '--base-url'" in result.output


def test_a_finished_run_is_neither_overwritten_nor_resumed_for_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    first = invoke("simulate", "--out", str(out), *QUICK)
    assert first.exit_code == 0, first.output
    bundle = json.loads(out.read_text())
    assert bundle["launch_command"] == "runner simulate --serve-only"  # what serves the same simulator
    again = invoke("simulate", "--out", str(out), *QUICK)
    assert again.exit_code == 1 and again.output.startswith(f"error: {out} is a finished run already")
    journal = out.with_name("run.journal.jsonl").read_bytes()
    resumed = invoke("simulate", "--out", str(out), "--resume", *QUICK)
    assert resumed.exit_code == 0 and "nothing left to measure" in resumed.output
    assert out.with_name("run.journal.jsonl").read_bytes() == journal
