"""Signatures: a signed run whose records recompute is verified; a figure changed after signing is "modified"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.bundle.records import records_path
from runner.bundle.signatures import signature_path, sums_path
from runner.simulator import SimConfig
from tests.builders import check_errors_at, make_signing_key, measure_simulator, sitegen_check

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="signing needs OpenSSH's ssh-keygen")
SIGNER = "alice@example.org"


@pytest.fixture(scope="module")
def signed_content(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A content folder with allowed_signers and one run the runner measured and signed."""
    content = tmp_path_factory.mktemp("content")
    key, _ = make_signing_key(content, SIGNER)
    measure_simulator(SimConfig(max_model_len=8192), content / "runs" / "signed.json", contexts=[1024], prefill_contexts=[1024],
                      concurrency=[1, 2], duration=0.5, max_output=32, sign=key)
    return content


@pytest.fixture
def content(signed_content: Path, tmp_path: Path) -> Path:
    """A fresh copy of the signed content folder."""
    return Path(shutil.copytree(signed_content, tmp_path / "content"))


def test_a_signed_run_whose_records_recompute_is_verified(content: Path) -> None:
    checked = sitegen_check(content)
    assert (checked.exit_code, checked.errors) == (0, [])
    assert checked.verdicts[0] == f"{content}/runs/signed.json: verified (signed by {SIGNER}; raw records recompute every cell)"


def test_one_figure_changed_after_signing_is_modified_and_fails(content: Path) -> None:
    bundle = content / "runs" / "signed.json"
    bundle.write_text(bundle.read_text().replace('"total_tok_s": ', '"total_tok_s": 1', 1))
    [line] = check_errors_at(bundle, "$")
    assert line == f"error: {bundle}:$: modified after signing: the signature by {SIGNER} no longer matches"
    assert any("in the bundle, but its raw records give" in line for line in sitegen_check(bundle).errors)
    assert "modified after alice@example.org signed it" in sitegen_check(bundle).verdicts[0]


def test_records_changed_after_signing(content: Path) -> None:
    records = records_path(content / "runs" / "signed.json")
    records.write_bytes(records.read_bytes()[::-1])
    checked = sitegen_check(content)
    assert checked.exit_code == 1
    assert f"error: {records}: modified after signing: the signature by {SIGNER} no longer matches" in checked.errors


def test_a_signer_the_allowed_signers_do_not_name_is_consistent_not_verified(content: Path, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    _, stranger = make_signing_key(tmp_path / "other", "eve@example.org")
    checked = sitegen_check(content, "--allowed-signers", stranger)
    assert (checked.exit_code, checked.errors) == (0, [])
    assert "consistent (signed by no one allowed_signers names" in checked.verdicts[0]


def test_the_sha256_sums_catch_a_change_without_the_signatures(content: Path) -> None:
    bundle = content / "runs" / "signed.json"
    signature_path(bundle).unlink()
    assert sums_path(bundle).is_file()
    bundle.write_text(bundle.read_text().replace('"notes": null', '"notes": "edited"', 1))
    [line] = check_errors_at(bundle, "$")
    assert line.endswith(f"modified after signing: its SHA-256 differs from the one in {sums_path(bundle).name}")


def test_allowed_signers_that_cannot_be_read(content: Path) -> None:
    checked = sitegen_check(content, "--allowed-signers", content / "missing")
    assert checked.exit_code == 1
    assert checked.errors == [f"error: {content}/missing: cannot read the allowed signers: no such file"]
