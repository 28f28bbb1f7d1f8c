"""Secrets: any field redaction would change is named, and its value is never printed."""

from __future__ import annotations

from pathlib import Path

from sitegen.check.checker import CheckContext, check_data
from sitegen.content import loader
from tests.builders import check_errors_at, edit_json

TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmN"


def test_a_token_in_the_notes_and_a_key_in_the_launch_command(seed_run: Path) -> None:
    def leak(document: dict) -> None:
        document["notes"] = f"downloaded with {TOKEN}"
        document["launch_command"] += " --api-key plainsecret123"

    edit_json(seed_run, leak)
    [notes] = check_errors_at(seed_run, "$.notes")
    [command] = check_errors_at(seed_run, "$.launch_command")
    assert "looks like a secret" in notes and "looks like a secret" in command
    assert TOKEN not in notes + command and "plainsecret123" not in notes + command


def test_a_secret_under_a_field_the_schema_does_not_know(seed_run: Path) -> None:
    edit_json(seed_run, lambda d: d["decode"][0].update(hf_token="abc123def"))
    lines = check_errors_at(seed_run, "$.decode[0].hf_token")
    assert sorted(line.split("hf_token: ", 1)[1] for line in lines) == [
        "holds what looks like a secret (a key, token, password or credential); remove it and rotate it",
        "unknown field: the schema has no such field"]


def test_a_build_finds_the_secrets_under_unknown_fields_that_sitegen_check_does(seed_run: Path) -> None:
    """A build checks a bundle the scrub found clean by its unknown fields alone: the same secrets, at any depth."""
    extra = {"auth": {"password": "hunter2pass"}, "args": ["--quiet", "HF_TOKEN=abc123def"], "note": "fine"}
    edit_json(seed_run, lambda d: d["run"].update(extra=extra))
    data = seed_run.read_bytes()
    bundle, clean = loader.read_bundle(seed_run, data)
    assert clean  # the scrub reads the schema's fields only
    in_build = check_data(seed_run, data, CheckContext(), bundle)
    alone = check_data(seed_run, data, CheckContext())
    assert in_build.problems == alone.problems
    assert sorted(p.where for p in alone.problems if "secret" in p.message) == ["$.run.extra.args[1]", "$.run.extra.auth.password"]
