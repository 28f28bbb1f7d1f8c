"""Speculative decoding against a real vLLM (CPU build): the tiny Llama drafting for itself.

The runner starts this vLLM itself (`--serve`), with a draft model and three speculative
tokens. Each cell's acceptance figures must be vLLM's own counters' change over that cell's
window, as read by the scrapes right before and after it.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

import runner.crosscheck
from runner.bundle.schema import SpeculativeCheck, decode_bundle
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from tests.builders import FIGURES
from tests.engines import vllm_server as vllm_cpu
from tests.engines.serving import engine_missing

pytestmark = pytest.mark.vllm
DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


def _total(samples: list, name: str, position: str | None = None) -> float:
    return sum(s.value for s in samples if s.name == name and (position is None or s.labels.get("position") == position))


def test_each_cells_acceptance_is_vllms_counter_change_over_its_window(tmp_path: Path, monkeypatch) -> None:
    if not vllm_cpu.VENV_PYTHON.exists():
        engine_missing(f"no vLLM venv at {vllm_cpu.VENV_PYTHON.parent.parent}", vllm_cpu.SETUP)
    model = vllm_cpu.make_tiny_llama(tmp_path / "tiny-llama")
    config = json.dumps({"method": "draft_model", "model": str(model), "num_speculative_tokens": 3})
    serve = (f"{vllm_cpu.VENV_PYTHON} -m vllm.entrypoints.openai.api_server --model {model} --host 127.0.0.1 "
             f"--port {{port}} --dtype {vllm_cpu.DTYPE} --enforce-eager --max-model-len 4096 --max-num-seqs 4 "
             f"--kv-cache-memory-bytes {vllm_cpu.KV_BYTES} --speculative-config '{config}'")
    cache = tmp_path / "cache"
    env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLM_CACHE_ROOT": str(cache),
           "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TMPDIR": str(tmp_path)}
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)

    windows: list[tuple[list, list, SpeculativeCheck | None]] = []
    checked = runner.crosscheck.speculative_check

    def recorded(before, after, during):  # what the runner read at each window's edges, and made of it
        found = checked(before, after, during)
        windows.append((before.samples, after.samples, found))
        return found

    monkeypatch.setattr(runner.crosscheck, "speculative_check", recorded)
    out = tmp_path / "spec.json"
    options = Options(serve=serve, serve_env=env, ready_timeout=vllm_cpu.STARTUP_S, out=out, contexts=[512],
                      prefill_contexts=[512], concurrency=[1, 2], duration=3.0, max_output=64)
    asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
    bundle = decode_bundle(out.read_bytes())
    assert (bundle.engine.speculative_method, bundle.engine.speculative_tokens) == ("draft_model", 3)
    assert bundle.launch.ended == "stopped by the runner (SIGTERM)"
    cells = [c for c in bundle.decode if isinstance(c.speculative, SpeculativeCheck)]
    assert len(cells) == len(bundle.decode) == 2
    recorded_checks = [found for _, _, found in windows]
    for cell in cells:
        spec = cell.speculative
        # The window whose check the cell kept (a distorted window is measured again; the last is kept).
        before, after, _ = windows[recorded_checks.index(spec)] if spec in recorded_checks else windows[-1]
        early, late = before, after
        drafts = _total(late, DRAFTS) - _total(early, DRAFTS)
        assert spec.drafts == drafts > 0
        assert spec.draft_tokens == _total(late, DRAFT_TOKENS) - _total(early, DRAFT_TOKENS) == 3 * drafts
        assert spec.accepted_tokens == _total(late, ACCEPTED) - _total(early, ACCEPTED)
        assert spec.acceptance_rate == pytest.approx(spec.accepted_tokens / spec.draft_tokens)
        assert spec.mean_acceptance_length == pytest.approx(1 + spec.accepted_tokens / drafts)
        assert spec.per_position == pytest.approx([
            (_total(late, PER_POSITION, str(k)) - _total(early, PER_POSITION, str(k))) / drafts for k in range(3)])
        FIGURES.append(f"vLLM speculative (draft_model × 3) {cell.context_tokens} × {cell.concurrency}: "
                       f"{spec.drafts} drafts, {spec.draft_tokens} draft tokens, {spec.accepted_tokens} accepted, "
                       f"mean acceptance length {spec.mean_acceptance_length:.3f}")
