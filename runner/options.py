"""Typed options of `runner measure` and `runner probe`, and parsing of token counts."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from runner.bundle.overrides import Metadata, MetadataFlag
from runner.errors import OptionError

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)

# `runner measure --id`; sitegen import has its own, worded for imports.
ID_FLAG = MetadataFlag("--id", "id", str, "Bundle id (slug); default: model, GPU, engine and date.")

_TOKENS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")

# Sane bounds on what a run may ask for, whatever a server claims: the longest context (16M
# tokens, past every model's), the most simultaneous requests one client holds, the longest
# window, the most output per request and repeats per cell, and the timeouts.
MAX_CONTEXT_TOKENS = 16 * 1024 * 1024
MAX_CONCURRENCY = 4096
MAX_DURATION_S = 3600.0
MAX_OUTPUT_TOKENS = 1024 * 1024
MAX_REPEATS = 100
MAX_TIMEOUT_S = 86400.0


class Options(msgspec.Struct, kw_only=True):
    """Everything one measurement run needs to know from the user."""

    base_url: str = DEFAULT_BASE_URL
    model: str | None = None
    contexts: list[int] | None = None
    prefill_contexts: list[int] | None = None
    concurrency: list[int] = msgspec.field(default_factory=lambda: list(DEFAULT_CONCURRENCY))
    duration: float = 30.0
    repeats: int = 1
    max_output: int = 4096
    kv_capacity: int | None = None
    api_key_env: str = "OPENAI_API_KEY"
    launch_command: str | None = None
    # A command that starts the server: the runner starts it, measures it and stops it.
    serve: str | None = None
    serve_env: dict[str, str] = msgspec.field(default_factory=dict)
    # "chat", "completions", or "auto": completions where the server has them, else chat.
    api: str = "auto"
    # Energy per token: this machine's GPUs through NVML, or DCGM exporters' /metrics (one per node).
    gpu_energy: bool = False
    gpu_metrics_urls: list[str] = msgspec.field(default_factory=list)
    # An SSH private key to sign the finished bundle and its request records with.
    sign: Path | None = None
    # The server's /metrics pages, one per replica or worker (default: the server's own /metrics).
    metrics_urls: list[str] = msgspec.field(default_factory=list)
    out: Path | None = None
    resume: bool = False
    replace: bool = False
    stall_timeout: float = 20.0
    ready_timeout: float = 60.0
    metadata: Metadata = msgspec.field(default_factory=Metadata)


def parse_tokens(text: str) -> int:
    """Parse a token count: "8K" = 8192, "1M" = 1048576, "3000" = 3000."""
    match = _TOKENS.match(text)
    if not match:
        raise OptionError(f"not a token count: {text!r} (use e.g. 8K, 16K or 3000)")
    number, unit = float(match.group(1)), match.group(2).upper()
    tokens = int(number * {"": 1, "K": 1024, "M": 1024 * 1024}[unit])
    if tokens < 1:
        raise OptionError(f"token count must be at least 1: {text!r}")
    if tokens > MAX_CONTEXT_TOKENS:
        raise OptionError(f"token count above {MAX_CONTEXT_TOKENS // (1024 * 1024)}M: {text!r}")
    return tokens


def parse_list(text: str, item: Callable[[str], int] = parse_tokens) -> list[int]:
    """Parse a comma-separated list of counts, sorted and without duplicates; "8K,,16K" is a typo, not 2 items."""
    if not text.strip():
        raise OptionError(f"empty list: {text!r}")
    parts = text.split(",")
    if not all(p.strip() for p in parts):
        raise OptionError(f"empty item in {text!r} (separate the items with single commas)")
    return sorted({item(p) for p in parts})


def parse_count(text: str) -> int:
    """Parse a positive integer such as a concurrency level."""
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_CONCURRENCY:
        raise OptionError(f"must be from 1 to {MAX_CONCURRENCY:,}: {text!r}")
    return value


def parse_base_url(text: str) -> str:
    """An http(s) URL with a host and a valid port, such as http://127.0.0.1:8000/v1."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise OptionError(f"not a URL: {text!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OptionError(f"not an http(s) URL with a host: {text!r} (e.g. http://127.0.0.1:8000/v1)")
    if port == 0:
        raise OptionError(f"port 0 cannot be connected to: {text!r}")
    if any(ord(c) < 33 for c in text.strip()):
        raise OptionError(f"a URL cannot hold spaces or control characters: {text!r}")
    return text.strip()
