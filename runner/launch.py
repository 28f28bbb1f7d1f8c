"""Facts read from the server's launch command: parallelism, quantization, revision."""

from __future__ import annotations

import msgspec

from runner.bundle.launch_words import launch_words


class LaunchFacts(msgspec.Struct, kw_only=True):
    """What the launch command says about the deployment."""

    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    quantization: str | None = None
    revision: str | None = None
    parallel_slots: int | None = None
    kv_unified: bool | None = None
    given: bool = False

    @property
    def gpu_count(self) -> int | None:
        """GPUs the deployment uses: tensor × pipeline parallel size, if either is given."""
        if self.tensor_parallel is None and self.pipeline_parallel is None:
            return None
        return (self.tensor_parallel or 1) * (self.pipeline_parallel or 1)

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
    "--quantization": "quantization", "-q": "quantization", "--revision": "revision",
    "-np": "parallel_slots", "--parallel": "parallel_slots", "LLAMA_ARG_N_PARALLEL": "parallel_slots",
}
# llama-server's switches for one KV buffer shared by all slots; the last one given wins.
_KV_UNIFIED = {"-kvu": True, "--kv-unified": True, "-no-kvu": False, "--no-kv-unified": False}


def parse_launch(command: str | None) -> LaunchFacts:
    """Read the flags the runner understands from a shell command line."""
    facts = LaunchFacts()
    if not command:
        return facts
    facts.given = True
    words = launch_words(command)
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag in _KV_UNIFIED:
            facts.kv_unified = _KV_UNIFIED[flag]
        elif flag == "LLAMA_ARG_KV_UNIFIED":
            facts.kv_unified = value.lower() in ("1", "true", "on", "enabled")
        if flag not in _FLAGS:
            continue
        if not value and i + 1 < len(words):
            value = words[i + 1]
        field = _FLAGS[flag]
        if field in ("tensor_parallel", "pipeline_parallel", "parallel_slots"):
            if value.isdigit():
                setattr(facts, field, int(value))
        elif value:
            setattr(facts, field, value)
    return facts
