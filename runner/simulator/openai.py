"""OpenAI/vLLM request and response shapes: parsing bodies, building JSON and SSE events.

Pure functions and Structs, no I/O: routes.py feeds them the engine's output.
Shapes follow vLLM's OpenAI-compatible server (error bodies, usage with
continuous_usage_stats, the chat role chunk, /tokenize and /detokenize).
"""

from __future__ import annotations

import time
import uuid
from typing import Literal, TypeVar

import msgspec

from runner.simulator.config import SimConfig
from runner.simulator.tokenizer import Tokenizer


class ApiError(Exception):
    """A request the API refuses, answered as vLLM's error JSON."""

    def __init__(self, status: int, message: str, kind: str = "BadRequestError") -> None:
        """Refuse with HTTP `status`; `kind` is the error `type` field."""
        super().__init__(message)
        self.status = status
        self.kind = kind

    def body(self) -> bytes:
        """The JSON error body, vLLM's shape."""
        return msgspec.json.encode(
            {"object": "error", "message": str(self), "type": self.kind, "param": None,
             "code": self.status}
        )


class StreamOptions(msgspec.Struct, kw_only=True):
    """OpenAI stream_options, with vLLM's continuous_usage_stats."""

    include_usage: bool = False
    continuous_usage_stats: bool = False


class ContentPart(msgspec.Struct, kw_only=True):
    """One part of a chat message's content; only text parts carry text."""

    type: str = "text"
    text: str = ""


class Message(msgspec.Struct, kw_only=True):
    """One chat message."""

    role: str
    content: str | list[ContentPart] | None = None


class CompletionBody(msgspec.Struct, kw_only=True):
    """POST /v1/completions."""

    prompt: str | list[int]
    model: str | None = None
    max_tokens: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False
    add_special_tokens: bool = True
    n: int = 1


class ChatBody(msgspec.Struct, kw_only=True):
    """POST /v1/chat/completions."""

    messages: list[Message]
    model: str | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False
    n: int = 1


class TokenizeBody(msgspec.Struct, kw_only=True):
    """POST /tokenize: a prompt or chat messages."""

    model: str | None = None
    prompt: str | None = None
    messages: list[Message] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool = True


class DetokenizeBody(msgspec.Struct, kw_only=True):
    """POST /detokenize."""

    tokens: list[int]
    model: str | None = None


Kind = Literal["completion", "chat"]
T = TypeVar("T")


class Generation(msgspec.Struct, kw_only=True):
    """A generation request reduced to what the engine and the responder need."""

    kind: Kind
    prompt: list[int]
    max_tokens: int
    stream: bool
    include_usage: bool
    continuous_usage: bool
    ignore_eos: bool


def decode_body(body: bytes, shape: type[T]) -> T:
    """Decode a JSON request body into `shape`, as a 400 when it does not fit."""
    try:
        return msgspec.json.decode(body, type=shape)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ApiError(400, f"Invalid request body: {exc}") from None


def check_model(requested: str | None, config: SimConfig) -> None:
    """404 like vLLM when the request names a model this server does not serve."""
    if requested is not None and requested != config.model:
        raise ApiError(404, f"The model `{requested}` does not exist.", "NotFoundError")


def chat_text(messages: list[Message], add_generation_prompt: bool = True) -> str:
    """The prompt text of a chat, with a ChatML-style template."""
    parts: list[str] = []
    for m in messages:
        content = m.content if isinstance(m.content, str) else "".join(
            p.text for p in m.content or [] if p.type == "text")
        parts.append(f"<|im_start|>{m.role}\n{content}<|im_end|>\n")
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def _prompt_ids(prompt: str | list[int], add_bos: bool, tokenizer: Tokenizer, text_only: bool) -> list[int]:
    """Token ids of a prompt: text is tokenized, ids are checked against the vocabulary."""
    if isinstance(prompt, str):
        return tokenizer.encode(prompt, add_bos=add_bos)
    if text_only:
        raise ApiError(400, "The prompt must be a string.")
    try:
        tokenizer.check(prompt)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    return prompt


def _generation(kind: Kind, prompt: list[int], max_tokens: int | None, stream: bool,
                options: StreamOptions | None, ignore_eos: bool, n: int,
                config: SimConfig) -> Generation:
    """Validate lengths like vLLM and build the Generation."""
    if n != 1:
        raise ApiError(400, "The simulator serves n=1 only.")
    if not prompt:
        raise ApiError(400, "The prompt is empty.")
    limit = config.max_model_len
    wanted = limit - len(prompt) if max_tokens is None else max_tokens
    if max_tokens is not None and max_tokens < 1:
        raise ApiError(400, f"max_tokens must be at least 1, got {max_tokens}.")
    if len(prompt) + max(wanted, 1) > limit:
        raise ApiError(400, (
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{len(prompt) + max(wanted, 0)} tokens ({len(prompt)} in the messages, "
            f"{max(wanted, 0)} in the completion). Please reduce the length of the messages "
            f"or completion."))
    options = options or StreamOptions()
    return Generation(kind=kind, prompt=prompt, max_tokens=wanted, stream=stream,
                      include_usage=stream and options.include_usage,
                      continuous_usage=stream and options.include_usage
                      and options.continuous_usage_stats and config.continuous_usage,
                      ignore_eos=ignore_eos)


def parse_completion(body: bytes, config: SimConfig, tokenizer: Tokenizer) -> Generation:
    """The Generation of a /v1/completions body."""
    req = decode_body(body, CompletionBody)
    check_model(req.model, config)
    prompt = _prompt_ids(req.prompt, config.add_bos and req.add_special_tokens, tokenizer, config.text_only)
    return _generation("completion", prompt, req.max_tokens, req.stream, req.stream_options,
                       req.ignore_eos, req.n, config)


def parse_chat(body: bytes, config: SimConfig, tokenizer: Tokenizer) -> Generation:
    """The Generation of a /v1/chat/completions body."""
    req = decode_body(body, ChatBody)
    check_model(req.model, config)
    prompt = tokenizer.encode(chat_text(req.messages), add_bos=config.add_bos)
    max_tokens = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
    return _generation("chat", prompt, max_tokens, req.stream, req.stream_options,
                       req.ignore_eos, req.n, config)


def tokenize(body: bytes, config: SimConfig, tokenizer: Tokenizer) -> bytes:
    """The /tokenize answer: tokens, count and max_model_len."""
    req = decode_body(body, TokenizeBody)
    check_model(req.model, config)
    if req.messages is not None:
        text = chat_text(req.messages, req.add_generation_prompt)
    elif req.prompt is not None:
        text = req.prompt
    else:
        raise ApiError(400, "Either prompt or messages is required.")
    tokens = tokenizer.encode(text, add_bos=config.add_bos and req.add_special_tokens)
    return msgspec.json.encode({"count": len(tokens), "max_model_len": config.max_model_len,
                                "tokens": tokens, "token_strs": None})


def detokenize(body: bytes, config: SimConfig, tokenizer: Tokenizer) -> bytes:
    """The /detokenize answer: the prompt text of the tokens."""
    req = decode_body(body, DetokenizeBody)
    check_model(req.model, config)
    try:
        return msgspec.json.encode({"prompt": tokenizer.decode(req.tokens)})
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


def models_body(config: SimConfig) -> bytes:
    """The /v1/models answer, with vLLM's max_model_len."""
    cards = [{"id": model, "object": "model", "created": int(time.time()),
              "owned_by": config.engine_name, "root": model, "parent": None,
              "max_model_len": config.max_model_len, "permission": []} for model in [config.model, *config.other_models]]
    return msgspec.json.encode({"object": "list", "data": cards})


class Responder:
    """Builds the JSON and SSE events of one generation's response."""

    def __init__(self, gen: Generation, model: str) -> None:
        """Responses for `gen`, naming `model` in every body."""
        self.gen = gen
        self._id = ("cmpl-" if gen.kind == "completion" else "chatcmpl-") + uuid.uuid4().hex
        self._created = int(time.time())
        self._model = model
        self._chunk_object = "text_completion" if gen.kind == "completion" else "chat.completion.chunk"

    def usage(self, completion_tokens: int, cached_tokens: int | None = None) -> dict[str, object]:
        """A usage object; prompt_tokens_details only where cached tokens are known."""
        prompt = len(self.gen.prompt)
        usage: dict[str, object] = {"prompt_tokens": prompt,
                                    "total_tokens": prompt + completion_tokens,
                                    "completion_tokens": completion_tokens}
        if cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
        return usage

    def _event(self, choices: list[dict[str, object]], usage: dict[str, object] | None) -> bytes:
        """One SSE `data:` event carrying a chunk object."""
        chunk: dict[str, object] = {"id": self._id, "object": self._chunk_object,
                                    "created": self._created, "model": self._model,
                                    "choices": choices}
        if usage is not None:
            chunk["usage"] = usage
        return b"data: " + msgspec.json.encode(chunk) + b"\n\n"

    def role_event(self, usage: dict[str, object] | None) -> bytes:
        """The chat stream's first event, announcing the assistant role."""
        return self._event([{"index": 0, "delta": {"role": "assistant", "content": ""},
                             "logprobs": None, "finish_reason": None}], usage)

    def token_event(self, text: str, finish_reason: str | None,
                    usage: dict[str, object] | None) -> bytes:
        """An event carrying newly generated text (and the finish reason on the last)."""
        if self.gen.kind == "completion":
            choice: dict[str, object] = {"index": 0, "text": text, "logprobs": None,
                                         "finish_reason": finish_reason, "stop_reason": None}
        else:
            choice = {"index": 0, "delta": {"content": text}, "logprobs": None,
                      "finish_reason": finish_reason, "stop_reason": None}
        return self._event([choice], usage)

    def usage_event(self, usage: dict[str, object]) -> bytes:
        """The include_usage event after the last token: no choices, final usage."""
        return self._event([], usage)

    def full_body(self, text: str, finish_reason: str | None, usage: dict[str, object]) -> bytes:
        """The non-streaming response body."""
        if self.gen.kind == "completion":
            choice: dict[str, object] = {"index": 0, "text": text, "logprobs": None,
                                         "finish_reason": finish_reason, "stop_reason": None}
            obj = "text_completion"
        else:
            choice = {"index": 0, "message": {"role": "assistant", "content": text,
                                              "tool_calls": []},
                      "logprobs": None, "finish_reason": finish_reason, "stop_reason": None}
            obj = "chat.completion"
        return msgspec.json.encode({"id": self._id, "object": obj, "created": self._created,
                                    "model": self._model, "choices": [choice], "usage": usage})


DONE_EVENT = b"data: [DONE]\n\n"
