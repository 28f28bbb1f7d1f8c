"""Facts read from the server's launch command: parallelism, quantization, revision."""

from __future__ import annotations

import shlex

import msgspec


class LaunchFacts(msgspec.Struct, kw_only=True):
    """What the launch command says about the deployment."""

    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    quantization: str | None = None
    revision: str | None = None

    @property
    def gpu_count(self) -> int | None:
        """GPUs the deployment uses: tensor × pipeline parallel size, if either is given."""
        if self.tensor_parallel is None and self.pipeline_parallel is None:
            return None
        return (self.tensor_parallel or 1) * (self.pipeline_parallel or 1)


_FLAGS = {
    "--tensor-parallel-size": "tensor_parallel", "-tp": "tensor_parallel", "--tp-size": "tensor_parallel", "--tp": "tensor_parallel",
    "--pipeline-parallel-size": "pipeline_parallel", "-pp": "pipeline_parallel", "--pp-size": "pipeline_parallel",
    "--quantization": "quantization", "-q": "quantization", "--revision": "revision",
}


def parse_launch(command: str | None) -> LaunchFacts:
    """Read the flags the runner understands from a shell command line."""
    facts = LaunchFacts()
    if not command:
        return facts
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag not in _FLAGS:
            continue
        if not value and i + 1 < len(words):
            value = words[i + 1]
        field = _FLAGS[flag]
        if field in ("tensor_parallel", "pipeline_parallel"):
            if value.isdigit():
                setattr(facts, field, int(value))
        elif value:
            setattr(facts, field, value)
    return facts
