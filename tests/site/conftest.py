"""Fixtures of the built-site suites: the seeds' site served over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import serve_folder


@pytest.fixture(scope="session")
def site_server(built_site: Path) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 serving the built site; yields its base URL."""
    yield from serve_folder(built_site)
