"""Facts read from the server's launch command: parallelism, quantization, revision."""

from __future__ import annotations

import re

import msgspec

from runner.bundle.launch_words import launch_words


class LaunchFacts(msgspec.Struct, kw_only=True):
    """What the launch command says about the deployment."""

    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    data_parallel: int | None = None
    expert_parallel: int | None = None
    expert_parallel_on: bool = False
    nodes: int | None = None
    quantization: str | None = None
    revision: str | None = None
    parallel_slots: int | None = None
    kv_unified: bool | None = None
    speculative_method: str | None = None
    speculative_tokens: int | None = None
    given: bool = False

    @property
    def gpu_count(self) -> int | None:
        """GPUs the deployment uses: tensor × pipeline × data parallel size, if any is given."""
        sizes = (self.tensor_parallel, self.pipeline_parallel, self.data_parallel)
        if all(size is None for size in sizes):
            return None
        return (self.tensor_parallel or 1) * (self.pipeline_parallel or 1) * (self.data_parallel or 1)

    @property
    def expert_parallel_size(self) -> int | None:
        """Expert-parallel size: given, or with vLLM's --enable-expert-parallel its tensor × data parallel size."""
        if self.expert_parallel is not None:
            return self.expert_parallel
        if self.expert_parallel_on:
            return (self.tensor_parallel or 1) * (self.data_parallel or 1)
        return None

    @property
    def llama_kv_unified(self) -> bool | None:
        """Does llama-server share one KV buffer among its slots? None without a command to tell.

        Explicit switches win; otherwise llama-server shares it when the slot count is left
        automatic, and splits it when -np is given.
        """
        if self.kv_unified is not None or not self.given:
            return self.kv_unified
        return self.parallel_slots is None


_FLAGS = {
    "--tensor-parallel-size": "tensor_parallel", "-tp": "tensor_parallel", "--tp-size": "tensor_parallel", "--tp": "tensor_parallel",
    "--pipeline-parallel-size": "pipeline_parallel", "-pp": "pipeline_parallel", "--pp-size": "pipeline_parallel",
    "--data-parallel-size": "data_parallel", "-dp": "data_parallel", "--dp-size": "data_parallel", "--dp": "data_parallel",
    "--expert-parallel-size": "expert_parallel", "--ep-size": "expert_parallel", "--ep": "expert_parallel",
    "--nnodes": "nodes", "--num-nodes": "nodes",
    "--quantization": "quantization", "-q": "quantization", "--revision": "revision",
    "-np": "parallel_slots", "--parallel": "parallel_slots", "LLAMA_ARG_N_PARALLEL": "parallel_slots",
}
# llama-server's switches for one KV buffer shared by all slots; the last one given wins.
_KV_UNIFIED = {"-kvu": True, "--kv-unified": True, "-no-kvu": False, "--no-kv-unified": False}
# Speculative decoding: vLLM's JSON config, and the flags that name a method or a draft length.
_SPEC_CONFIG = ("--speculative-config", "--speculative_config", "-sc")
_SPEC_METHOD = {"--speculative-algorithm": None, "--speculative-method": None, "--model-draft": "draft_model",
                "-md": "draft_model", "--speculative-model": "draft_model"}
_SPEC_TOKENS = ("--num-speculative-tokens", "--speculative-num-steps", "--draft-max", "--draft")
_JSON_METHOD = re.compile(r'"method"\s*:\s*"([^"]+)"')
MAX_SPECULATIVE_TOKENS = 1024
_JSON_TOKENS = re.compile(r'"num_speculative_tokens"\s*:\s*(\d+)')


def parse_launch(command: str | None) -> LaunchFacts:
    """Read the flags the runner understands from a shell command line."""
    facts = LaunchFacts()
    if not command:
        return facts
    facts.given = True
    words = launch_words(command)
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag in ("--enable-expert-parallel", "-ep", "--enable-ep-moe"):
            facts.expert_parallel_on = True
        if flag in _KV_UNIFIED:
            facts.kv_unified = _KV_UNIFIED[flag]
        elif flag == "LLAMA_ARG_KV_UNIFIED":
            facts.kv_unified = value.lower() in ("1", "true", "on", "enabled")
        if not value and i + 1 < len(words) and flag in (*_FLAGS, *_SPEC_CONFIG, *_SPEC_METHOD, *_SPEC_TOKENS):
            value = words[i + 1]
        _speculative(facts, flag, value)
        if flag not in _FLAGS:
            continue
        field = _FLAGS[flag]
        if field in ("tensor_parallel", "pipeline_parallel", "data_parallel", "expert_parallel", "nodes", "parallel_slots"):
            if value.isdigit():
                setattr(facts, field, int(value))
        elif value:
            setattr(facts, field, value)
    return facts


def _speculative(facts: LaunchFacts, flag: str, value: str) -> None:
    """Read speculative decoding's method and draft length from one flag and its value."""
    if flag in _SPEC_CONFIG:
        method, tokens = _JSON_METHOD.search(value), _JSON_TOKENS.search(value)
        facts.speculative_method = method.group(1) if method else facts.speculative_method or "configured"
        if tokens and 0 < int(tokens.group(1)) <= MAX_SPECULATIVE_TOKENS:
            facts.speculative_tokens = int(tokens.group(1))
    elif flag in _SPEC_METHOD and value:
        facts.speculative_method = _SPEC_METHOD[flag] or value.lower()
    elif flag in _SPEC_TOKENS and value.isdigit() and 0 < int(value) <= MAX_SPECULATIVE_TOKENS:
        facts.speculative_tokens = int(value)
