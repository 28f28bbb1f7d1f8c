"""Secrets out of anything the runner writes: launch commands, error messages, logs.

One table of patterns; each match keeps its label (the flag, variable or header name)
and replaces only the secret with `<redacted>`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "<redacted>"

_VALUE = r"""(?:"[^"]*"|'[^']*'|[^\s"']+)"""
_SECRET_WORD = r"(?:api[-_]?key|access[-_]?key|secret[-_]?key|secret|token|password|passwd|pass|pat|credentials?)"

# (pattern, replacement): group 1 is always the part that is kept.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # Flags whose name ends in a secret word: --api-key X, --api-key=X, --hf-token "X".
    (re.compile(rf"(--?(?:[\w.-]*[-_])?{_SECRET_WORD}(?:\s+|=)){_VALUE}", re.I), rf"\1{REDACTED}"),
    # Environment assignments whose name ends in a secret word: HF_TOKEN=hf_… vllm serve.
    (re.compile(rf"(\b[A-Za-z_][\w]*{_SECRET_WORD}=){_VALUE}", re.I), rf"\1{REDACTED}"),
    # HTTP headers: Authorization: Bearer X, X-Api-Key: X.
    (re.compile(r"(Authorization\s*:\s*(?:Bearer|Basic|Token)?\s*)[^\s\"']+", re.I), rf"\1{REDACTED}"),
    (re.compile(r"((?:x-)?api-?key\s*:\s*)[^\s\"']+", re.I), rf"\1{REDACTED}"),
    # A bearer token anywhere else: --header "Bearer X".
    (re.compile(r"(\bBearer\s+)(?!<redacted>)[^\s\"']+", re.I), rf"\1{REDACTED}"),
    # Credentials in URLs: scheme://user:pass@host and ?api_key=X / &token=X.
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^\s/@\"']+@", re.I), rf"\1{REDACTED}@"),
    (re.compile(rf"([?&](?:[\w-]*[-_])?(?:{_SECRET_WORD}|key|sig|signature|auth)=)[^&\s\"'#]+", re.I), rf"\1{REDACTED}"),
    # Well-known token shapes wherever they appear.
    (re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16})\b"), REDACTED),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return `text` with every known secret shape and every given secret value replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
