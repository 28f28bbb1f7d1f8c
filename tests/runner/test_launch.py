"""What the launch command tells: GPU count, quantization, revision, llama.cpp's KV layout."""

from __future__ import annotations

import pytest

from runner.launch import parse_launch


def test_launch_command_facts() -> None:
    facts = parse_launch("vllm serve m --tensor-parallel-size 2 -pp=2 --quantization fp8 --revision main")
    assert (facts.gpu_count, facts.quantization, facts.revision) == (4, "fp8", "main")
    assert parse_launch("llama-server -m x").gpu_count is None


@pytest.mark.parametrize(("command", "unified"), [
    (None, None),  # nothing to go by
    ("llama-server -m x", True),  # automatic slot count shares the buffer
    ("llama-server -m x -np 4", False),
    ("llama-server -m x --parallel=4 -kvu", True),
    ("llama-server -m x -kvu --no-kv-unified", False),  # the last switch wins
    ("LLAMA_ARG_KV_UNIFIED=1 llama-server -m x -np 8", True),
    ("LLAMA_ARG_N_PARALLEL=8 llama-server -m x", False),
])
def test_llama_kv_unified_from_the_launch_command(command: str | None, unified: bool | None) -> None:
    assert parse_launch(command).llama_kv_unified is unified
