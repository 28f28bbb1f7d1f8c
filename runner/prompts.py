"""Prompts of exactly the target length in the server's own tokens, one per request.

Three ways, best first: token-id prompts (a list of ints as `prompt`, exact by
construction), text checked with the server's /tokenize and /detokenize, and plain
text calibrated against `usage.prompt_tokens`. Every prompt opens with its own prefix
(run nonce, context, slot), so concurrent requests share no KV cache and a resumed run
starts cold. The filler is seeded word salad rather than a repeated passage, which
would invite the model to repeat it.
"""

from __future__ import annotations

import random
from typing import Literal

import msgspec

from runner.client import Client, Trace
from runner.errors import RequestFailed

Mode = Literal["ids", "text", "calibrated"]
Api = Literal["completions", "chat"]

POOL_TOKENS = 16384
# Token ids past this are no vocabulary's: the answer is not a token list.
MAX_TOKEN_ID = 1 << 31
# Sized prompts are counted behind this head, so the server caches the head-led copy and the
# prompt itself stays cold for its prefill. It ends in a newline, which tokenizers keep apart
# from the "Request" every prompt starts with, so it adds the same tokens to each.
SIZING_HEAD = "Sizing run.\n"
_WORDS = (
    "time year people way day man thing woman life child world school state family student group "
    "country problem hand part place case week company system program question work government number "
    "night point home water room mother area money story fact month lot right study book eye job word "
    "business issue side kind head house service friend father power hour game line end member law car "
    "city community name president team minute idea kid body information back parent face others level "
    "office door health person art war history party result change morning reason research girl guy "
    "moment air teacher force education river garden winter summer bridge engine signal market window "
    "letter island forest valley station harbor theory method answer record energy method culture "
    "quickly slowly quietly carefully often never always sometimes bright dark small large ancient modern "
    "green blue red yellow warm cold early late simple complex strong gentle open closed near distant "
    "runs builds writes reads carries finds keeps leaves brings holds turns moves lives believes "
    "and or but because while after before under over between through during without within"
).split()


class Prompt(msgspec.Struct, frozen=True):
    """What goes in the request's `prompt` field and how many server tokens it is."""

    prompt: list[int] | str
    tokens: int


def word_salad(seed: int, words: int) -> str:
    """Seeded, non-repeating English-looking filler text."""
    rng = random.Random(seed)
    out = []
    for i in range(words):
        word = rng.choice(_WORDS)
        out.append(word.capitalize() if i % 11 == 0 else word)
        if i % 11 == 10:
            out[-1] += "."
    return " ".join(out)


def request_body(model: str, llama_cpp: bool, prompt: list[int] | str, max_tokens: int,
                 ignore_eos: bool = True, api: Api = "completions") -> dict:
    """A streaming request body that asks for a running token count in every chunk (vLLM's and
    SGLang's continuous_usage_stats, llama.cpp's timings_per_token): a /completions prompt, or
    for the chat API the prompt as one user message (which the server wraps in its chat template)."""
    text = {"messages": [{"role": "user", "content": prompt}]} if api == "chat" else {"prompt": prompt}
    body = {
        "model": model, **text, "max_tokens": max_tokens, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    if llama_cpp:
        body["timings_per_token"] = True
    if ignore_eos:
        body["ignore_eos"] = True
    return body


class PromptMaker:
    """Builds exact-length prompts for one server and model; call `setup` once first."""

    def __init__(self, client: Client, model: str, engine: str, nonce: str, api: Api = "completions") -> None:
        """Prompts for `model` on the server behind `client` through `api`; `nonce` makes this run's prompts unique.

        Through the chat API a prompt is text (no API takes token ids as a message), counted
        with the chat template the server wraps it in.
        """
        self.client = client
        self.model = model
        self.api = api
        self.templated = api == "chat" and engine != "llama.cpp"  # /tokenize takes messages: an exact check
        self.llama_cpp = engine == "llama.cpp"
        self.nonce = nonce
        self.mode: Mode = "calibrated"
        self.pool: list[int] = []
        self.pool_base = 1
        self.offset = 0
        self.chars_per_token = 4.0
        self.sizing_tokens = 0
        self._cache: dict[tuple[int, int], Prompt] = {}

    async def setup(self) -> Mode:
        """Pick the best way this server allows and calibrate the tokens it adds (BOS)."""
        try:
            self.pool = await self.tokenize(word_salad(1, POOL_TOKENS))
        except RequestFailed:
            self.pool = []
        self.pool_base = max(1, len(self.pool))
        if self.pool:
            probe = self.pool[:16]
            if self.api == "completions":  # the chat API takes text, not token ids
                try:
                    counted = await self._count(probe)
                    self.mode, self.offset = "ids", counted - len(probe)
                    return self.mode
                except RequestFailed:
                    pass
            try:
                text = await self.detokenize(probe)
                counted = await self._count(text)
                self.mode, self.offset = "text", counted - len(await self.tokenize(text))
                self.templated = self.templated and await self._agrees(text, counted)
                return self.mode
            except RequestFailed:
                pass
        sample = f"Request {self.nonce}-sizing: " + word_salad(2, 400)
        plain = await self._count(sample)
        self.sizing_tokens = await self._count(SIZING_HEAD + sample) - plain
        if self.sizing_tokens < 1:
            raise RequestFailed("the sizing head added no tokens; cannot size prompts without caching them")
        self.chars_per_token = len(sample) / max(1, plain)
        self.mode = "calibrated"
        return self.mode

    async def make(self, context: int, slot: int) -> Prompt:
        """The prompt of `context` server tokens for request slot `slot` (cached)."""
        key = (context, slot)
        if key not in self._cache:
            self._cache[key] = await self._build(context, slot)
        return self._cache[key]

    async def _build(self, context: int, slot: int) -> Prompt:
        prefix = f"Request {self.nonce}-{context}-{slot}: "
        if self.mode == "calibrated":
            return await self._calibrated(prefix, context, slot)
        want = max(1, context - self.offset)
        head = await self.tokenize(prefix)
        ids = (head + await self._filler(want - len(head), seed=context * 1009 + slot))[:want]
        if self.mode == "ids":
            return Prompt(prompt=ids, tokens=len(ids) + self.offset)
        for _ in range(6):
            text = await self.detokenize(ids)
            counted = len(await self.tokenize(text))
            if counted == want and self.templated:  # the template's tokens, counted by the server itself
                off = await self._templated_count(text) - context
                if off == 0:
                    return Prompt(prompt=text, tokens=context)
                want -= off
            elif counted == want:
                return Prompt(prompt=text, tokens=counted + self.offset)
            ids = ids[: len(ids) - (counted - want)] if counted > want else ids + await self._filler(want - counted, seed=len(ids))
        raise RequestFailed(f"could not build a prompt of exactly {context} tokens through /tokenize")

    async def _agrees(self, text: str, counted: int) -> bool:
        """Whether the server's /tokenize counts a chat prompt as its usage did (else the offset alone sizes prompts)."""
        try:
            return await self._templated_count(text) == counted
        except RequestFailed:
            return False

    async def _templated_count(self, text: str) -> int:
        """Tokens of `text` as one user message in the server's chat template (vLLM's /tokenize takes messages)."""
        answer = await self.client.post_json("/tokenize", {
            "model": self.model, "messages": [{"role": "user", "content": text}], "add_generation_prompt": True,
        }, root=True)
        count = answer.get("count") if isinstance(answer, dict) else None
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if type(count) is int and count > 0:
            return count
        if isinstance(tokens, list) and tokens:
            return len(tokens)
        raise RequestFailed("/tokenize answered a chat prompt without a token count")

    async def _filler(self, count: int, seed: int) -> list[int]:
        """`count` pool tokens from a seeded offset in the first POOL_TOKENS words' worth.

        The pool grows with fresh word salad until it holds them all, so no prompt repeats
        a passage, however long the context.
        """
        if count <= 0:
            return []
        start = seed % self.pool_base
        while len(self.pool) < start + count:
            self.pool += await self.tokenize(" " + word_salad(len(self.pool), POOL_TOKENS))
        return self.pool[start : start + count]

    async def _calibrated(self, prefix: str, context: int, slot: int) -> Prompt:
        """Text sized by the measured characters per token, corrected against the server's count
        of the text behind SIZING_HEAD, so that the text itself is never sent before it is used."""
        words = word_salad(context * 1009 + slot, int(context * self.chars_per_token / 4) + 64)
        chars = int(context * self.chars_per_token)
        for _ in range(4):
            text = prefix + words[: max(0, chars - len(prefix))]
            counted = await self._count(SIZING_HEAD + text) - self.sizing_tokens
            if counted == context:
                break
            chars = max(1, int(chars * context / counted))
            while len(words) < chars:
                words += " " + words
        return Prompt(prompt=text, tokens=counted)

    async def _count(self, prompt: list[int] | str) -> int:
        """Server tokens in `prompt`, from the usage of a one-token completion."""
        trace = await self.client.stream(self.body(prompt, max_tokens=1), Trace())
        if trace.prompt_tokens is None:
            raise RequestFailed("the server reports no usage.prompt_tokens; cannot size prompts exactly")
        return trace.prompt_tokens

    def body(self, prompt: list[int] | str, max_tokens: int, ignore_eos: bool = True) -> dict:
        """A streaming request body for `prompt` through this maker's API (see request_body)."""
        return request_body(self.model, self.llama_cpp, prompt, max_tokens, ignore_eos, self.api)

    async def tokenize(self, text: str) -> list[int]:
        """The server's token ids for `text`, without special tokens."""
        if self.llama_cpp:
            answer = await self.client.post_json("/tokenize", {"content": text, "add_special": False}, root=True)
        else:
            answer = await self.client.post_json(
                "/tokenize", {"model": self.model, "prompt": text, "add_special_tokens": False}, root=True)
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, list):
            raise RequestFailed("/tokenize answered without a token list")
        if not all(type(t) is int and 0 <= t < MAX_TOKEN_ID for t in tokens):
            raise RequestFailed("/tokenize answered with something other than token ids")
        return tokens

    async def detokenize(self, ids: list[int]) -> str:
        """The server's text for token `ids`."""
        body = {"tokens": ids} if self.llama_cpp else {"model": self.model, "tokens": ids}
        answer = await self.client.post_json("/detokenize", body, root=True)
        text = answer.get("content", answer.get("prompt")) if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise RequestFailed("/detokenize answered without text")
        return text
