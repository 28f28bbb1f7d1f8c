"""One streamed request's trace, and how each chunk of its stream adds to it: tokens, finish, checks.

A count the server states (usage, or llama.cpp's timings) is taken over one per text chunk, and
a count that is no count fails the request, since it would become a figure.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from runner.bundle.schema import MAX_TOKENS
from runner.bundle.terminal_text import printable
from runner.client.failures import QUOTE_CHARS, quoted
from runner.errors import LoopDetected, RequestFailed
from runner.loops import LoopDetector


class _Usage(msgspec.Struct):
    # Counts are checked by _token_count, so that one that is not a count is named with its value.
    prompt_tokens: Any = None
    completion_tokens: Any = None


class _Delta(msgspec.Struct):
    """A chat chunk's delta: the answer, and a reasoning model's thinking under either name servers use."""

    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


class _Choice(msgspec.Struct):
    text: str | None = None
    delta: _Delta | None = None
    finish_reason: str | None = None

    @property
    def output(self) -> str | None:
        """The text this chunk adds, of either kind: a completion's text, or a chat delta's answer or reasoning."""
        if self.text:
            return self.text
        delta = self.delta
        return (delta.content or delta.reasoning_content or delta.reasoning) if delta is not None else None


class _Timings(msgspec.Struct):
    predicted_n: Any = None


class Chunk(msgspec.Struct):
    """One `data:` event of a completions or chat stream, as far as the runner reads it."""

    model: str | None = None
    choices: list[_Choice] = []
    usage: _Usage | None = None
    timings: _Timings | None = None
    error: Any = None


chunk_decoder = msgspec.json.Decoder(Chunk)


class Trace:
    """One streamed request: when it started, when each batch of tokens arrived, how it ended."""

    __slots__ = ("start", "times", "counts", "tokens", "prompt_tokens", "finished", "end", "loops", "last_seen",
                 "counted_by", "finish_reason")

    def __init__(self, detect_loops: bool = False) -> None:
        """A request about to be sent; with `detect_loops` its text is checked for loops."""
        # last_seen: when the stream last made progress (a token), which keepalives do not count as.
        self.start = self.last_seen = time.perf_counter()
        self.times: list[float] = []
        self.counts: list[int] = []
        self.tokens = 0
        self.prompt_tokens: int | None = None
        self.finished = False
        self.finish_reason: str | None = None
        self.end: float | None = None
        self.loops = LoopDetector() if detect_loops else None
        # "usage" or "timings" once a chunk before the last carried a running count, else "chunks".
        self.counted_by = "chunks"

    @property
    def first_token_at(self) -> float | None:
        """When the first token arrived, or None if none has."""
        return self.times[0] if self.times else None


def _token_count(value: Any, field: str) -> int | None:
    """`value` as a token count, None kept; anything but a whole number from 0 to MAX_TOKENS (true
    included) is a protocol error that names the field, since it would become a figure."""
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        raise RequestFailed(f"the server sent {field} = {printable(repr(value), QUOTE_CHARS)}, which is not a token count")
    return value


def _running_count(chunk: Chunk) -> tuple[int | None, str]:
    """The tokens generated so far as the chunk states them, and where that came from."""
    if chunk.usage is not None:
        count = _token_count(chunk.usage.completion_tokens, "usage.completion_tokens")
        if count is not None:
            return count, "usage"
    if chunk.timings is not None:
        count = _token_count(chunk.timings.predicted_n, "timings.predicted_n")
        if count is not None:
            return count, "timings"
    return None, "chunks"


def take_chunk(chunk: Chunk, trace: Trace, now: float, expect_model: str | None) -> None:
    """Account one decoded chunk: tokens, finish, model check, loop check."""
    if chunk.error is not None:
        message = chunk.error.get("message", chunk.error) if isinstance(chunk.error, dict) else chunk.error
        raise RequestFailed(f"the server reported an error mid-stream: {printable(str(message), QUOTE_CHARS)}")
    if expect_model and chunk.model and chunk.model != expect_model:
        raise RequestFailed(f"the server answered as model {quoted(chunk.model)}, not {quoted(expect_model)}")
    choice = chunk.choices[0] if chunk.choices else None
    usage = chunk.usage
    running, source = _running_count(chunk)
    if running is not None:
        new = running - trace.tokens
        if choice is not None and choice.output:  # a count beside the text, not only in a closing report
            trace.counted_by = source
    else:
        new = 1 if choice is not None and choice.output else 0
    prompt_tokens = _token_count(usage.prompt_tokens, "usage.prompt_tokens") if usage is not None else None
    if prompt_tokens is not None:
        trace.prompt_tokens = prompt_tokens
    if new > 0:
        trace.last_seen = now
        trace.times.append(now)
        trace.counts.append(new)
        trace.tokens += new
    if choice is not None:
        if choice.finish_reason:
            trace.finished = True
            trace.finish_reason = printable(str(choice.finish_reason), 40)
            trace.end = now
        if trace.loops is not None and choice.output and trace.loops.feed(choice.output):
            raise LoopDetected()
