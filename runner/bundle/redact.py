"""Secrets out of anything the runner and sitegen write: launch commands, error messages, notes, logs.

Secrets are found by class, not by a list of known flags: a name that says key, token,
secret, password or credential marks its value secret wherever the name appears, as an
option (`--api-key K1 K2`, all of its values), an assignment (`API_KEY=…`), or a key at
any depth of a JSON or dict-like value (`{"s3_secret_access_key": "…"}`). URL user-info,
`curl -u user:pass`, authorization headers and well-known token shapes are caught by
their form. Each match keeps its label and replaces only the secret with `<redacted>`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

import msgspec

T = TypeVar("T")

REDACTED = "<redacted>"

# Words that make a name secret. "tokens" (plural) is left out on purpose: it counts tokens
# (--max-num-batched-tokens), and "tokenizer" is a model, not a credential.
_SECRET_WORDS = frozenset({
    "key", "keys", "apikey", "apikeys", "token", "secret", "secrets", "password", "passwords", "passwd",
    "pass", "pwd", "passphrase", "credential", "credentials", "creds", "auth", "authorization", "pat",
})
# Joined words ("accesskey", "hftoken", "dbpassword") end in one of these.
_SECRET_ENDINGS = ("key", "keys", "token", "secret", "password", "passwd", "credential", "credentials")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

# A shell word: quoted parts, backslash escapes and plain characters, glued together.
_SHELL_WORD = re.compile(r"""(?:"(?:\\.|[^"\\])*"?|'[^']*'?|\\.|[^\s"'\\])+""", re.S)
_SHELL_OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "(", ")", ">", ">>", "<", "2>", "2>&1"})
# Options whose value is `user:password` (curl, wget and friends).
_USER_OPTIONS = frozenset({"-u", "--user", "--proxy-user", "-U", "--http-user", "--ftp-user"})

# A name followed by = or : (quoted as in JSON or Python, or bare as in NAME=value or a header).
_PAIR = re.compile(r"""(?<![\w$])(?P<quote>\\?["']?)(?P<name>[A-Za-z_][\w.-]*)(?P=quote)\s*(?P<sep>=|:)[ \t]*""")
_AUTH_SCHEME = re.compile(r"(?:Bearer|Basic|Token|Digest)[ \t]+(?=\S)", re.I)
_BARE_VALUE = re.compile(r"""[^\s,;&|}\]"'<>)]+""")

# (pattern, replacement) for secrets recognised by their form; group 1 is the part kept.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # A bearer token anywhere: --header "Bearer X" (a header named Authorization is caught as a pair).
    (re.compile(r"(\bBearer\s+)(?!<redacted>)[^\s\"']+", re.I), rf"\1{REDACTED}"),
    # URL user-info, up to the last @ of the authority (a password may hold an @).
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)(?!<redacted>@)[^\s/?#\"'<>]*@", re.I), rf"\1{REDACTED}@"),
    # Query parameters: ?sig=X&X-Amz-Signature=Y (secret-named ones are caught as pairs too).
    (re.compile(r"([?&](?:[\w-]*[-_])?(?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&\s\"'#]+", re.I),
     rf"\1{REDACTED}"),
    # Well-known token shapes wherever they appear.
    (re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
                r"|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16}|eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,})"), REDACTED),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return `text` with every secret it names or shows, and every given secret value, replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _redact_options(text)
    text = _redact_pairs(text)
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def redact_fields(value: T, secrets: Iterable[str] = ()) -> T:
    """`value` with every string in it redacted: the fields of a msgspec Struct, at any depth, and lists of them.

    Every free-text field is covered (launch command, notes, errors, but also an engine version
    or a GPU name a user typed), so no field added later can carry a secret past this.
    """
    secrets = list(secrets)
    if isinstance(value, str):
        return redact(value, secrets)  # type: ignore[return-value]
    if isinstance(value, list):
        return [redact_fields(item, secrets) for item in value]  # type: ignore[return-value]
    if isinstance(value, msgspec.Struct):
        changes = {}
        for name in value.__struct_fields__:  # not structs.fields(): it evaluates every annotation, 20x slower
            current = getattr(value, name)
            if isinstance(current, (str, list, msgspec.Struct)):
                cleaned = redact_fields(current, secrets)
                if cleaned != current:
                    changes[name] = cleaned
        return msgspec.structs.replace(value, **changes) if changes else value
    return value


def secret_name(name: str) -> bool:
    """Whether a flag, variable or key name says it holds a secret ("--api-key", "HF_TOKEN", "secretAccessKey")."""
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words)


def _is_option(word: str) -> bool:
    """A command-line option such as -k or --api-key=X (not "-" alone, not a negative number)."""
    return len(word) > 1 and word[0] == "-" and not re.match(r"-\d", word)


def _redact_options(text: str) -> str:
    """Secret-named options lose all their values (up to the next option or shell operator); `-u user:pass` its password."""
    pieces: list[str] = []
    last = 0
    secret_values = False
    user_value = False
    for match in _SHELL_WORD.finditer(text):
        word = match.group()
        replacement = None
        if word in ("\\\n", "\\\r\n", "\\"):  # a line continuation separates nothing
            continue
        if word in _SHELL_OPERATORS:
            secret_values = user_value = False
        elif _is_option(word):
            name, equals, value = word.lstrip("-").partition("=")
            secret_values = user_value = False
            if secret_name(name):
                if equals:
                    replacement = word[: len(word) - len(value)] + REDACTED
                else:
                    secret_values = True
            elif word.partition("=")[0] in _USER_OPTIONS:
                if equals:
                    replacement = _without_password(word, len(word) - len(value))
                else:
                    user_value = True
        elif secret_values:
            replacement = REDACTED
        elif user_value:
            replacement = _without_password(word, 0)
            user_value = False
        if replacement is not None and replacement != word:
            pieces.append(text[last:match.start()])
            pieces.append(replacement)
            last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


def _without_password(word: str, start: int) -> str:
    """`user:password` (from `start` in word) with the password redacted; no colon, no change."""
    colon = word.find(":", start)
    return word if colon < 0 else word[: colon + 1] + REDACTED


def _redact_pairs(text: str) -> str:
    """Secret-named `NAME=value`, `"name": value` and `name: value` pairs lose their value, at any depth."""
    pieces: list[str] = []
    last = 0
    position = 0
    while True:
        match = _PAIR.search(text, position)
        if match is None:
            break
        position = match.end()
        if not secret_name(match.group("name")):
            position = match.start("name") + len(match.group("name"))
            continue
        start = match.end()
        scheme = _AUTH_SCHEME.match(text, start)  # "Authorization: Bearer X" keeps its scheme
        start = scheme.end() if scheme else start
        end, quoted = _value_end(text, start)
        if end <= start or text[start:end] in (REDACTED, f'"{REDACTED}"', f"'{REDACTED}'"):
            continue
        pieces.append(text[last:start])
        pieces.append(quoted + REDACTED + quoted if quoted else (f'"{REDACTED}"' if text[start] in "{[" and match.group("quote") else REDACTED))
        last = position = end
    pieces.append(text[last:])
    return "".join(pieces)


def _value_end(text: str, start: int) -> tuple[int, str]:
    """Where the value starting at `start` ends, and the quote that encloses it ("" when bare)."""
    if start >= len(text):
        return start, ""
    for quote in ('\\"', "\\'", '"', "'"):
        if text.startswith(quote, start):
            close = text.find(quote, start + len(quote))
            while close > 0 and quote in "\"'" and text[close - 1] == "\\":
                close = text.find(quote, close + 1)
            return (len(text) if close < 0 else close + len(quote)), quote
    if text[start] in "{[":
        return _bracket_end(text, start), ""
    bare = _BARE_VALUE.match(text, start)
    return (bare.end() if bare else start), ""


def _bracket_end(text: str, start: int) -> int:
    """The end of the balanced {…} or […] starting at `start` (quotes respected), or the end of text."""
    depth = 0
    quote = None
    index = start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(text)
