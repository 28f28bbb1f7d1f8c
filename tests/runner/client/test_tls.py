"""Clients share one verifying TLS context, made again when its setting or its file changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import certifi
import pytest

from runner.client.tls import trusted_context


def test_clients_share_one_trusted_context_until_its_setting_or_file_changes(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    default = trusted_context()
    assert trusted_context() is default
    bundle = tmp_path / "ca.pem"
    shutil.copy(certifi.where(), bundle)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    named = trusted_context()
    assert named is not default and trusted_context() is named
    with bundle.open("a") as file:
        file.write("\n")
    assert trusted_context() is not named
