"""The run id made from model, GPU, engine and date."""

from __future__ import annotations

from runner.bundle.ids import run_id


def test_run_id() -> None:
    assert run_id("Qwen3/Qwen3-8B", "H200 NVL", "vllm", "2026-09-03") == "qwen3-qwen3-8b-h200-nvl-vllm-2026-09-03"
