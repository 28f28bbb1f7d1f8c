"""Secrets out of anything the runner and sitegen write: launch commands, error messages, notes, logs.

Secrets are found by class, not by a list of known flags: a name that says key, token,
secret, password or credential marks its value secret wherever the name appears, as an
option (`--api-key K1 K2`, all of its values), an assignment (`API_KEY=…`), or a key at
any depth of a JSON or dict-like value (`{"s3_secret_access_key": "…"}`). URL user-info,
`curl -u user:pass`, authorization headers and well-known token shapes are caught by
their form. Each match keeps its label and replaces only the secret with `<redacted>`.
"""

from __future__ import annotations

import base64
import functools
import os
import re
from collections.abc import Iterable, Mapping
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


# A value shorter than this from the environment is no secret worth matching ("1", "true").
_ENV_SECRET_MIN = 8
# A given secret cut short by an excerpt ("…AKIAab/cd+SEC…") goes from this many characters on.
_TRUNCATED_MIN = 6
# What may follow a secret an excerpt cut short: the end of the text, an ellipsis, closing quotes.
_CUT_END = re.compile(r"""(?:…|\.\.\.)?["'}\]\s]*\Z""")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return `text` with every secret it names or shows, and every given secret value, replaced.

    A given value goes in every form a server may echo it in (see `_echo_forms`), and also
    when an excerpt cut it short at the end of the text.
    """
    for secret in secrets:
        if secret:
            text = _redact_value(text, secret)
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
        for name in value.__struct_fields__:  # not structs.fields(): it evaluates every annotation on each call
            current = getattr(value, name)
            if isinstance(current, (str, list, msgspec.Struct)):
                cleaned = redact_fields(current, secrets)
                if cleaned != current:
                    changes[name] = cleaned
        return msgspec.structs.replace(value, **changes) if changes else value
    return value


def redact_json(value: object) -> object:
    """Parsed JSON with every secret out: each string redacted, and the text a secret-named key holds
    (`{"api_key": "K"}`, `{"auth": ["user", "pw"]}`, at any depth) replaced whole, as are the values of
    headers written as pairs (`[["X-Api-Key", "K"]]`, `{"name": "Authorization", "value": "K"}`).
    Figures stay, since measurements share the words ("time_to_first_token": {"value": 80.1, "unit": "ms"}):
    a value holding any number is checked key by key instead. `value` itself comes back where it held
    no secret, so a caller tells a change by identity, without comparing the whole value again."""
    if isinstance(value, str):
        clean = redact(value)
        return value if clean == value else clean
    if isinstance(value, list):
        if len(value) == 2 and _secret_label(value[0]) and value[1]:
            return [value[0], REDACTED]
        items = [redact_json(item) for item in value]
        return value if all(new is old for new, old in zip(items, value)) else items
    if isinstance(value, dict):
        if _secret_label(value.get("name")) and value.get("value"):
            return {**{key: redact_json(item) for key, item in value.items()}, "value": REDACTED}
        clean = {key: REDACTED if _only_text(item) and secret_name(str(key)) else redact_json(item)
                 for key, item in value.items()}
        return value if all(clean[key] is item for key, item in value.items()) else clean
    return value


def _only_text(value: object) -> bool:
    """Whether a value is text through and through (a string, or containers of them), with some text in it.
    Each item is looked at once, so a deeply nested value costs its size, not twice per level."""
    if isinstance(value, str):
        return bool(value)
    if isinstance(value, (list, dict)):
        items = list(value.values()) if isinstance(value, dict) else value
        return any(item is not None for item in items) and all(item is None or _only_text(item) for item in items)
    return False


def _secret_label(value: object) -> bool:
    """Whether a header pair's name says it holds a secret."""
    return isinstance(value, str) and secret_name(value)


def known_secrets(api_key: str | None, launch_command: str | None = None,
                  environ: Mapping[str, str] | None = None) -> list[str]:
    """The secret values a run knows and a server may echo back: its API key, the values its launch
    command's secret-named options and assignments hold, and secret-named environment variables."""
    found = [api_key] if api_key else []
    if launch_command:  # each pass on the whole command: an option's values may hold a NAME=value too
        _redact_options(launch_command, found)
        _redact_pairs(launch_command, found)
    for name, value in (os.environ if environ is None else environ).items():
        if len(value) >= _ENV_SECRET_MIN and secret_name(name):
            found.append(value)
    return sorted({value for value in found if value and value != REDACTED}, key=len, reverse=True)


def _redact_value(text: str, secret: str) -> str:
    """`text` without `secret` in any echoed form, nor its first characters where an excerpt cut it."""
    text = _echo_pattern(secret).sub(REDACTED, text)
    if len(secret) < _TRUNCATED_MIN:
        return text
    pieces = _char_patterns(secret)
    start = _echo_pattern(secret[:_TRUNCATED_MIN]).search(text)
    while start is not None:
        end = start.end()
        for piece in pieces[_TRUNCATED_MIN:]:
            step = piece.match(text, end)
            if step is None:
                break
            end = step.end()
        if _CUT_END.match(text, end):
            return text[: start.start()] + REDACTED + text[end:]
        start = _echo_pattern(secret[:_TRUNCATED_MIN]).search(text, start.start() + 1)
    return text


def _char_forms(char: str) -> list[str]:
    """Regular expressions for one character of a secret as a server may echo it: itself, after
    backslashes (JSON's `\\/`, a repr's `\\\\`), as a \\u escape, percent-encoded (once or twice,
    either case, `+` for a space), as an HTML entity (once or twice), and a URL-decoded `+` as a space."""
    code = ord(char)
    forms = [re.escape(char), r"\\+" + re.escape(char)]
    if code < 0x10000:
        forms.append(r"\\+u" + _any_case(f"{code:04x}"))
    forms.append("".join(f"%(?:25)*{_any_case(f'{byte:02x}')}" for byte in char.encode()))
    forms.append(rf"&(?:amp;)*#(?:0*{code}|[xX]0*{_any_case(f'{code:x}')});")
    named = {"&": "amp", '"': "quot", "'": "apos", "<": "lt", ">": "gt"}.get(char)
    if named:
        forms.append(rf"&(?:amp;)*{named};")
    if char in " +":
        forms.append(r"[ +]")
    return forms


def _any_case(hex_digits: str) -> str:
    """A pattern for hex digits in either case."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in hex_digits)


@functools.lru_cache(maxsize=64)
def _char_patterns(secret: str) -> tuple[re.Pattern[str], ...]:
    """One compiled pattern per character of `secret`, each matching any of its echoed forms."""
    return tuple(re.compile("(?:" + "|".join(_char_forms(char)) + ")") for char in secret)


@functools.lru_cache(maxsize=64)
def _echo_pattern(secret: str) -> re.Pattern[str]:
    """`secret` in every form `_char_forms` knows, character by character (so mixed forms too), or
    base64-encoded (as a proxy may echo a Basic credential) at any of the three byte alignments."""
    chars = "".join("(?:" + "|".join(_char_forms(char)) + ")" for char in secret)
    return re.compile("|".join([chars, *map(re.escape, _base64_cores(secret))]))


def _base64_cores(secret: str) -> list[str]:
    """The base64 text `secret` always encodes to wherever it starts (the groups no neighbour touches),
    in the standard and URL-safe alphabets; none for a secret too short to leave 16 such characters."""
    raw = secret.encode()
    cores = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        whole_groups = (len(raw) + shift) // 3
        core = encoded[4 if shift else 0: 4 * whole_groups]
        if len(core) >= 16:
            cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def secret_name(name: str) -> bool:
    """Whether a flag, variable or key name says it holds a secret ("--api-key", "HF_TOKEN", "secretAccessKey")."""
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words)


def _is_option(word: str) -> bool:
    """A command-line option such as -k or --api-key=X (not "-" alone, not a negative number)."""
    return len(word) > 1 and word[0] == "-" and not re.match(r"-\d", word)


def _redact_options(text: str, found: list[str] | None = None) -> str:
    """Secret-named options lose all their values (up to the next option or shell operator); `-u user:pass` its password.

    Each value removed is added to `found`, where one is given."""
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
            if found is not None:
                found.append(_unquoted(_removed(word, replacement)))
            pieces.append(text[last:match.start()])
            pieces.append(replacement)
            last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


def _removed(original: str, replacement: str) -> str:
    """What a replacement took out of `original`: its text after the part both share."""
    kept = replacement.removesuffix(REDACTED)
    return original[len(kept):] if original.startswith(kept) else original


def _unquoted(value: str) -> str:
    """A shell or JSON value without the quotes around it."""
    for quote in ('\\"', "\\'", '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return value[len(quote): -len(quote)]
    return value


def _without_password(word: str, start: int) -> str:
    """`user:password` (from `start` in word) with the password redacted; no colon, no change."""
    colon = word.find(":", start)
    return word if colon < 0 else word[: colon + 1] + REDACTED


def _redact_pairs(text: str, found: list[str] | None = None) -> str:
    """Secret-named `NAME=value`, `"name": value` and `name: value` pairs lose their value, at any depth.

    Each value removed is added to `found`, where one is given."""
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
        if found is not None:
            found.append(_unquoted(text[start:end]))
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
