"""A secret in a launch command never reaches a page or download, whatever the bundle says."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.build import build_site
from sitegen.cli import main
from tests.builders import FIXTURES, SEEDS
from tests.sample_site import MIMO, write_content

SECRETS = {
    "--api-key sk-live-0123456789": "sk-live-0123456789",
    "--api-key=sk-eq-abcdef": "sk-eq-abcdef",
    "HF_TOKEN=hf_secretvalue123 vllm serve m": "hf_secretvalue123",
    "-H 'Authorization: Bearer bearer-secret-42'": "bearer-secret-42",
    "--endpoint https://user:pa55word@host/v1": "pa55word",
}


@pytest.mark.parametrize(("command", "secret"), SECRETS.items())
def test_build_redacts_a_committed_secret_everywhere(tmp_path: Path, command: str, secret: str) -> None:
    content = write_content(tmp_path)
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["launch_command"] = f"vllm serve model {command} --port 8000"
    path.write_text(json.dumps(bundle))
    out = tmp_path / "site"
    build_site(content, out)
    leaked = [p for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaked == []
    assert "&lt;redacted&gt;" in (out / "runs" / bundle["id"] / "index.html").read_text()


@pytest.mark.parametrize(("command", "secret"), SECRETS.items())
def test_import_redacts_the_launch_command_option(tmp_path: Path, command: str, secret: str) -> None:
    result = CliRunner().invoke(main, ["import", str(SEEDS[0]), "--out", str(tmp_path), "--launch-command", command])
    assert result.exit_code == 0, result.output
    written = next(tmp_path.glob("*.json")).read_text()
    assert secret not in written and "<redacted>" in written


def test_secrets_in_error_reasons_and_notes_are_redacted(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["notes"] = "measured through https://user:hunter2@api.example.com/v1"
    bundle["decode"][2].update(status="Failed", error="HTTP 401 from https://x/v1?api_key=sk-abcdefghijklmnopqrstuv")
    path.write_text(json.dumps(bundle))
    build_site(content, tmp_path / "site")
    leaked = [p for p in (tmp_path / "site").rglob("*") if p.is_file() and (b"hunter2" in p.read_bytes() or b"sk-abcdefghij" in p.read_bytes())]
    assert leaked == []
    assert "api_key=&lt;redacted&gt;" in (tmp_path / "site" / "runs" / bundle["id"] / "index.html").read_text()


def _guidellm_with_secrets(path: Path, out: Path) -> Path:
    """GuideLLM's report with an authorization header in each request's arguments and a key in its info."""
    data = json.loads(path.read_text())
    for benchmark in data["benchmarks"]:
        for request in [r for status in ("successful", "errored", "incomplete") for r in benchmark["requests"][status]]:
            arguments = json.loads(request["request_args"])
            arguments["headers"] = {"Authorization": "Bearer bearer-secret-42"}
            request["request_args"] = json.dumps(arguments)
            request["info"]["api_key"] = "sk-eq-abcdef"
    out.write_text(json.dumps(data))
    return out


def _aiperf_with_secrets(folder: Path, out: Path) -> Path:
    """AIPerf's detailed folder, each request's record carrying a key and an echoed URL with user-info."""
    shutil.copytree(folder, out)
    for jsonl in out.rglob("profile_export.jsonl"):
        lines = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
        for line in lines:
            line["metadata"]["api_key"] = "sk-eq-abcdef"
            line["metadata"]["url"] = "https://user:bearer-secret-42@host/v1"
            line["metadata"]["credentials"] = {"value": "pair-secret-7"}
            line["metadata"]["headers"] = [["X-Api-Key", "pair-secret-7"], {"name": "Authorization", "value": "pair-secret-7"}]
        jsonl.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


@pytest.mark.parametrize("make", [
    lambda tmp: _guidellm_with_secrets(FIXTURES / "peers" / "guidellm" / "sweep" / "in256.json", tmp / "report.json"),
    lambda tmp: _aiperf_with_secrets(FIXTURES / "peers" / "aiperf" / "detailed", tmp / "detailed"),
], ids=["guidellm", "aiperf"])
def test_import_redacts_secrets_in_the_tools_per_request_records(tmp_path: Path, make: object) -> None:
    source = make(tmp_path)
    result = CliRunner().invoke(main, ["import", str(source), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    [records] = (tmp_path / "runs").glob("*.source-requests.jsonl.gz")
    text = gzip.decompress(records.read_bytes()).decode()
    assert "bearer-secret-42" not in text and "sk-eq-abcdef" not in text and "pair-secret-7" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines and all("<redacted>" in json.dumps(line["record"]) for line in lines)
    assert all(isinstance(line["record"], dict) for line in lines), "each record stays a JSON object"
