"""The runner against llama.cpp's own server on CPU (tiny model built in the fixture)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from tests.llama_fixture import SLOTS, llama_server  # noqa: F401  (session fixture)
from runner.measure import measure
from runner.options import Options
from runner.progress import Progress
from runner.schema import decode_bundle

pytestmark = pytest.mark.llama


def test_requests_queued_exactly_where_requests_exceed_slots(llama_server, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "run.json"
    options = Options(base_url=llama_server.base_url, contexts=[300], prefill_contexts=[300, 1000],
                      concurrency=[1, 2, 4, 8], duration=2.0, max_output=128, out=out,
                      launch_command=" ".join(llama_server.command) + " --api-key sk-llama-secret-0123456789")
    asyncio.run(measure(options, progress=Progress(0, io.StringIO())))
    bundle = decode_bundle(out.read_bytes())
    assert bundle.engine.name == "llama.cpp"
    assert bundle.run.served_model and bundle.run.served_model.endswith("tiny.gguf")
    assert "sk-llama-secret" not in out.read_text() and "--api-key <redacted>" in bundle.launch_command
    statuses = {c.concurrency: c.status for c in bundle.decode}
    assert statuses == {n: "Requests queued" if n > SLOTS else "Valid" for n in (1, 2, 4, 8)}
    for cell in bundle.decode:
        assert cell.prompt_tokens == 300
        assert cell.total_tok_s and cell.total_tok_s > 0
        assert cell.output_tokens == pytest.approx(cell.total_tok_s * cell.measured_s, abs=1)
    assert [p.prompt_tokens for p in bundle.prefill] == [300, 1000]
    assert all(p.status == "Valid" and p.prompt_tok_s > 0 for p in bundle.prefill)
