"""The client's view of a base URL: the server root its other endpoints hang off."""

from __future__ import annotations

from runner.client import server_root


def test_server_root() -> None:
    assert server_root("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000"
    assert server_root("https://h.example/api/v1/") == "https://h.example/api"
