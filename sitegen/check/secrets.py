"""Secrets in a submitted bundle: any text that redaction would change (runner/bundle/redact.py).

The build scrubs what it publishes, but a secret in a results repository's history is leaked
already: the checker names its field so the submitter can remove it, and never prints it. Every
string is judged as redaction judges it; a field the schema does not know is judged with its
name too (`"hf_token": "abc"`), as redaction judges `HF_TOKEN=abc`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from runner.bundle import schema
from runner.bundle.redact import redact
from sitegen.check.decoding import Unknown
from sitegen.check.fields import Chain, spelt
from sitegen.check.verdict import Problem

MESSAGE = "holds what looks like a secret (a key, token, password or credential); remove it and rotate it"
# Every field name of the schema: their values are judged alone ("itl_per_token_ms" names a latency, not a token).
SCHEMA_NAMES = frozenset(name for kind in vars(schema).values()
                         if isinstance(kind, type) and issubclass(kind, msgspec.Struct) for name in kind.__struct_fields__)


def secret_problems(path: Path, raw: Any) -> list[Problem]:
    """A problem for each field of the bundle's JSON (`raw`) whose text redaction would change."""
    return [Problem(str(path), spelt(where), MESSAGE) for where, text in _texts(raw) if _secret(text)]


def unknown_secret_problems(path: Path, unknown: list[Unknown]) -> list[Problem]:
    """secret_problems for a bundle whose fields the scrub found clean (its every text: no date is a
    secret), so that only the keys the schema does not know, and what they hold, are left to judge."""
    return [Problem(str(path), spelt(where), MESSAGE)
            for field in unknown for where, text in _texts({field.key: field.value}, field.parent) if _secret(text)]


@functools.lru_cache(maxsize=1 << 14)
def _secret(text: str) -> bool:
    """Whether redaction changes `text`; remembered, as bundles share most strings."""
    return redact(text) != text


def _texts(root: Any, at: Chain = None) -> Iterator[tuple[Chain, str]]:
    """The text of every field of plain JSON (lying `at`) with where it lies: each string, and `name=value`
    (or the name alone) for a field whose name the schema does not know. Numbers are passed over unvisited."""
    if type(root) is not dict and type(root) is not list:
        yield from [(at, root)] if type(root) is str else []
        return
    stack: list[tuple[Any, Chain]] = [(root, at)]
    while stack:
        node, where = stack.pop()
        for key, value in node.items() if type(node) is dict else enumerate(node):
            kind = type(value)
            if type(key) is str and key not in SCHEMA_NAMES:
                plain = kind in (str, int, float)
                yield (where, key), f"{key}={value}" if plain else key
                if plain:
                    continue
            if kind is str:
                yield (where, key), value
            elif kind is dict or kind is list:
                stack.append((value, (where, key)))
