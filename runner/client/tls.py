"""The TLS context every client verifies servers with, made once and shared: loading a CA bundle is
costly, and a sweep or a test session makes many clients in one process."""

from __future__ import annotations

import functools
import os
import ssl

import httpx


def trusted_context() -> ssl.SSLContext:
    """The TLS context that verifies servers as httpx would (SSL_CERT_FILE, else SSL_CERT_DIR, else its
    CA bundle), loaded once per setting and file version: every client, and a sweep makes many, shares it."""
    cert_file = os.environ.get("SSL_CERT_FILE") or None
    try:
        stat = os.stat(cert_file) if cert_file else None
    except OSError:
        stat = None  # httpx's own load names what is wrong with it
    version = (stat.st_mtime_ns, stat.st_size) if stat else None
    return _context_for(cert_file, None if cert_file else os.environ.get("SSL_CERT_DIR") or None, version)


@functools.lru_cache(maxsize=4)
def _context_for(cert_file: str | None, cert_dir: str | None, version: tuple[int, int] | None) -> ssl.SSLContext:
    """httpx's verifying context, made anew for each key (the settings and the file's version, which
    httpx reads from the environment itself); a failure is not kept."""
    return httpx.create_ssl_context()
