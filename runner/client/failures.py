"""What went wrong talking to a server, in one line: no headers, no secrets, a server's text bounded
and its controls shown as escapes."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import httpx

from runner.bundle.terminal_text import printable
from runner.errors import RequestFailed

# Characters of a server's text (a body, a message, a model name) that an error message quotes.
QUOTE_CHARS = 200


class UntrustedCertificate(RequestFailed):
    """The server's TLS certificate failed verification: asking again cannot help."""


def excerpt(data: bytes, limit: int = QUOTE_CHARS) -> str:
    """A short single-line excerpt of a server answer for an error message, its controls shown as escapes."""
    return printable(data.decode("utf-8", "replace").replace("\n", " ").strip(), limit)


def quoted(text: str) -> str:
    """A server's text quoted in an error message: bounded, its controls shown as escapes."""
    return f"'{printable(text, QUOTE_CHARS)}'"


def byte_size(count: int) -> str:
    """A byte count as an error message says it."""
    return f"{count / 1_000_000:.3g} MB" if count >= 1_000_000 else f"{count:,} bytes"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and the exceptions behind it, nearest first (a few: the bound only guards against a cycle)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def detail(exc: BaseException) -> str:
    """What an exception says, bounded and printable; where it says nothing, what its causes say, else its kind."""
    said = next((str(cause) for cause in _causes(exc) if str(cause)), type(exc).__name__)
    return printable(said, QUOTE_CHARS)


def _ssl_cause(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error behind `exc`, if one is among its causes."""
    return next((cause for cause in _causes(exc) if isinstance(cause, ssl.SSLError)), None)


def connection_failure(exc: httpx.HTTPError, root: str, path: str, answered: bool, silence: float) -> RequestFailed:
    """What went wrong with the connection to the server at `root`, in one line without headers or secrets.

    `answered`: whether the server's HTTP answer had begun; `silence`: the read timeout that ran out.
    A certificate that fails verification is an UntrustedCertificate, which waiting for the server
    cannot cure.
    """
    tls = _ssl_cause(exc) if isinstance(exc, httpx.ConnectError) else None
    if isinstance(tls, ssl.SSLCertVerificationError):
        reason = printable(tls.verify_message, QUOTE_CHARS) if tls.verify_message else detail(tls)
        return UntrustedCertificate(
            f"the server's TLS certificate is not trusted: {reason} ({root}); if you trust it, "
            "set SSL_CERT_FILE to a PEM bundle that holds it (or its CA) and run again")
    if tls is not None:
        return RequestFailed(f"the TLS handshake with {root} failed ({path}): {detail(tls)}; "
                             "is it an http:// server, or one whose TLS settings this client does not share?")
    if isinstance(exc, httpx.ReadTimeout):
        return RequestFailed(f"no data from the server for {silence:g} s ({path})")
    if isinstance(exc, httpx.TimeoutException):
        return RequestFailed(f"timed out talking to the server ({path}): {type(exc).__name__}")
    if isinstance(exc, httpx.ConnectError):
        return RequestFailed(f"cannot connect to {root} ({path}): {detail(exc)}")
    if not answered and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        guess = "; is it an https:// server?" if root.startswith("http://") else ""
        return RequestFailed(f"the server closed the connection without an HTTP answer ({path}: {detail(exc)}){guess}")
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return RequestFailed(f"connection lost mid-request ({path}): {detail(exc)}")
    return RequestFailed(f"{type(exc).__name__} talking to the server ({path}): {detail(exc)}")
