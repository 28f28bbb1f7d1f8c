"""Settings of the simulated engine, and the timing model they drive.

Timing model (all figures exact up to event-loop jitter; the scheduler sleeps to
absolute monotonic deadlines, so errors do not accumulate):

* Prefill: each newly admitted request takes
  ``(prompt_tokens - cached_tokens) / prefill_tok_s`` seconds. Prefills run one
  after another and no decode step runs meanwhile (as in an engine without
  chunked prefill). The end of a request's prefill emits its first token, so
  for a lone cold request ``TTFT = prompt_tokens / prefill_tok_s``.
* Prefix cache: prompts are hashed in full KV blocks (``block_size`` tokens,
  chained like vLLM's); a request whose leading blocks were prefilled before
  prefills only the rest (at least its last token is always recomputed).
* Decode: one step serves every running request that has its first token::

      step_ms = base_step_ms + per_seq_ms * batch + per_ktoken_ms * context_tokens / 1000

  where ``batch`` is the number of sequences in the step and
  ``context_tokens`` the sum of their prompt plus generated tokens. Each step
  gives each sequence ``tokens_per_chunk`` tokens (one SSE chunk), so per-request
  tok/s = ``1000 * tokens_per_chunk / step_ms`` and total tok/s =
  ``batch * tokens_per_chunk * 1000 / step_ms``.
* Admission: first come, first served while fewer than ``max_num_seqs`` run and
  the KV cache has room for ``ceil((prompt + max_tokens) / block_size)`` blocks
  (reserved whole at admission, freed the moment the request ends); others wait.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from runner.simulator.faults import Faults

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegative = Annotated[float, msgspec.Meta(ge=0)]


class SimConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Everything that shapes the simulator's answers and timings (see module docstring)."""

    model: str = "sim-model"
    # Further model ids /v1/models lists (a server hosting several models); only `model` answers.
    other_models: list[str] = []
    engine_name: str = "vllm"
    version: str = "0.1.0+sim"
    max_model_len: PositiveInt = 65536
    kv_capacity_tokens: PositiveInt = 1_048_576
    block_size: PositiveInt = 16
    max_num_seqs: PositiveInt = 256
    enable_prefix_caching: bool = True
    prefill_tok_s: Annotated[float, msgspec.Meta(gt=0)] = 20_000.0
    base_step_ms: NonNegative = 10.0
    per_seq_ms: NonNegative = 0.2
    per_ktoken_ms: NonNegative = 0.01
    tokens_per_chunk: PositiveInt = 1
    # Honour stream_options.continuous_usage_stats as vLLM does; false acts like an engine that
    # reports usage only in the final chunk.
    continuous_usage: bool = True
    # Neither /tokenize nor token-id prompts, as on TensorRT-LLM: clients must size text prompts
    # from usage.prompt_tokens.
    text_only: bool = False
    # A BOS token is prepended to text prompts (not to token-id prompts), as Llama-style servers do.
    add_bos: bool = True
    # End of sequence after this many tokens unless the request sets ignore_eos; None = never.
    eos_after_tokens: PositiveInt | None = None
    # After this many output tokens the text repeats `loop_text` forever; None = never loops.
    loop_after_tokens: Annotated[int, msgspec.Meta(ge=0)] | None = None
    loop_text: Annotated[str, msgspec.Meta(min_length=1)] = " and so it goes on,"
    seed: int = 0
    # Append every arrival and emitted batch of tokens to this file as JSON lines (see BatchEngine).
    token_log: str | None = None
    faults: Faults = msgspec.field(default_factory=Faults)

    def __post_init__(self) -> None:
        """Reject settings no real engine would start with."""
        if self.max_model_len > self.num_gpu_blocks * self.block_size:
            raise ValueError(
                f"max_model_len ({self.max_model_len}) exceeds the KV cache "
                f"({self.num_gpu_blocks} blocks of {self.block_size}); it could not hold one request"
            )
        if not self.loop_text.isascii():
            raise ValueError("loop_text must be ASCII, so every token streams as whole text")
        if self.base_step_ms + self.per_seq_ms <= 0:
            raise ValueError("base_step_ms + per_seq_ms must be positive, or decode would never yield")

    @property
    def num_gpu_blocks(self) -> int:
        """KV cache size in blocks, as vLLM reports it in cache_config_info."""
        return self.kv_capacity_tokens // self.block_size

    def step_seconds(self, batch: int, context_tokens: int) -> float:
        """Duration of one decode step for `batch` sequences holding `context_tokens` in all."""
        ms = self.base_step_ms + self.per_seq_ms * batch + self.per_ktoken_ms * context_tokens / 1000
        return ms / 1000.0


def decode_config(data: bytes) -> SimConfig:
    """SimConfig from JSON; unknown fields, also among the faults, raise msgspec.ValidationError."""
    return msgspec.json.decode(data, type=SimConfig)
