"""The runner against the simulator with known timings: figures, statuses, crash and resume."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from runner.bundle.schema import decode_bundle
from runner.journal import journal_path
from runner.simulator import SimConfig, running_simulator
from tests.builders import measure_simulator

# step = 20 + 2·batch ms, two tokens per chunk: per request 2000 / step tok/s.
TIMED = SimConfig(max_model_len=8192, kv_capacity_tokens=32768, max_num_seqs=2, prefill_tok_s=10_000,
                  base_step_ms=20, per_seq_ms=2, per_ktoken_ms=0, tokens_per_chunk=2)


def test_figures_and_statuses_match_the_simulator(tmp_path: Path) -> None:
    bundle = measure_simulator(TIMED, tmp_path / "run.json", contexts=[4096], prefill_contexts=[4096, 8192],
                               concurrency=[1, 2, 4, 8], duration=2.0, max_output=256)
    assert bundle.origin == "runner (simulated)" and bundle.engine.name == "speed-matrix simulator"
    cells = {c.concurrency: c for c in bundle.decode}
    statuses = {1: "Valid", 2: "Valid", 4: "Requests queued", 8: "Over capacity"}
    assert cells.keys() == statuses.keys()
    # On a busy machine the client may fall behind and a measured cell be Distorted, saying so: never a figure shown as Valid.
    found = {n: c.status for n, c in cells.items()}
    assert all(found[n] == statuses[n] or (found[n] == "Distorted" and statuses[n] != "Over capacity") for n in cells), found
    assert any(c.status != "Distorted" for n, c in cells.items() if n != 8), "no cell left to compare with the simulator"
    for n, running in ((1, 1), (2, 2), (4, 2)):  # at 4, two were always waiting
        cell = cells[n]
        assert cell.prompt_tokens == 4096 and cell.completed == 0 and cell.error is None
        if cell.distortion:
            continue  # the client fell behind and said so, whatever the status: its figures are not the server's to match
        # What the simulator itself counted and timed in the window, as its /metrics tell it.
        assert cell.server and cell.output_tokens == pytest.approx(cell.server.generated_tokens, abs=running)
        assert cell.tbt_ms == pytest.approx(cell.server.itl_per_token_ms, rel=0.03)
        # Its model's speed (step = 20 + 2·batch ms): a busy machine can only slow the simulator, never hasten it.
        per_request = 2000 / (20 + 2 * running)
        assert cell.total_tok_s <= running * per_request * 1.04 and cell.per_request_tok_s <= per_request * 1.03
        assert cell.tbt_ms >= 1000 / per_request * 0.97
        # Seats streaming: the simulator's own summed inter-token time says how many; a starved simulator
        # lets its first tokens come late, and then both counts fall short of the model's together. The
        # window's total is then those seats at the per-request speed, not the model's seats.
        assert cell.avg_active == pytest.approx(cell.server.active_mean, rel=0.04) and cell.avg_active <= running
        assert cell.total_tok_s == pytest.approx(cell.avg_active * cell.per_request_tok_s, rel=0.04)
        assert cell.measured_s == pytest.approx(2.0, abs=0.05)
        assert cell.output_tokens == pytest.approx(cell.total_tok_s * cell.measured_s, abs=1)
    assert cells[8].total_tok_s is None and cells[8].output_tokens is None
    prefill = {p.context_tokens: p for p in bundle.prefill}
    assert [p.status for p in prefill.values()] == ["Valid", "Valid"]
    assert prefill[8192].prompt_tokens == 8191  # one below the max length leaves room for the output token
    for point in prefill.values():
        # A busy machine can only delay the first token, never hasten it: tight below, looser above.
        modelled_ms = point.prompt_tokens / 10
        assert modelled_ms * 0.99 <= point.ttft_ms <= modelled_ms * 1.12
        assert 10_000 / 1.12 <= point.prompt_tok_s <= 10_000 * 1.01


def test_looped_streams_discard_the_cell(tmp_path: Path) -> None:
    looping = SimConfig(max_model_len=8192, loop_after_tokens=20, base_step_ms=1, per_seq_ms=0, per_ktoken_ms=0)
    bundle = measure_simulator(looping, tmp_path / "run.json", contexts=[1024], prefill_contexts=[1024],
                               concurrency=[1, 2], duration=6.0, max_output=4096)
    assert [p.status for p in bundle.prefill] == ["Valid"]
    for cell in bundle.decode:
        assert cell.status == "Looped"
        assert (cell.completed, cell.output_tokens, cell.total_tok_s, cell.ttft_ms) == (0, 0, None, None)


def test_text_only_server_gets_exact_prompts_and_a_cold_prefill(tmp_path: Path) -> None:
    """No /tokenize and no token ids: prompts are sized against usage, and sizing leaves nothing cached."""
    text_only = SimConfig(max_model_len=8192, prefill_tok_s=10_000, base_step_ms=5, per_seq_ms=0, text_only=True)
    bundle = measure_simulator(text_only, tmp_path / "run.json", contexts=[2048], prefill_contexts=[2048, 4096],
                               concurrency=[1, 2], duration=0.5, max_output=64)
    for point in bundle.prefill:
        assert point.status == "Valid" and point.prompt_tokens == point.context_tokens
        assert point.ttft_ms >= point.prompt_tokens / 10 * 0.99, "a sized prompt must not be served from cache"
    assert [c.prompt_tokens for c in bundle.decode] == [2048] * 2
    for cell in bundle.decode:  # on a busy machine the client may fall behind, and must say so
        assert cell.status == "Valid" or (cell.status == "Distorted" and _client_side(cell.distortion)), cell.distortion


def _client_side(reason: str | None) -> bool:
    """Whether every part of a distortion is the client's own (its loop, its core, a late window), none the server's."""
    parts = (reason or "").split("; ")
    return bool(reason) and all(p.startswith(("the client's event loop", "the client used", "the window ended")) for p in parts)


def test_a_server_without_running_counts_is_flagged_in_the_bundle(tmp_path: Path) -> None:
    """Usage only at the end: chunks are counted, and the bundle says so; with a running count it does not."""
    quiet = SimConfig(max_model_len=4096, base_step_ms=5, per_seq_ms=0, tokens_per_chunk=4, continuous_usage=False)
    flagged = measure_simulator(quiet, tmp_path / "quiet.json", contexts=[1024], prefill_contexts=[1024],
                                concurrency=[1], duration=0.5, max_output=64)
    assert flagged.notes and "one per streamed chunk" in flagged.notes
    counted = measure_simulator(msgspec.structs.replace(quiet, continuous_usage=True), tmp_path / "counted.json",
                                contexts=[1024], prefill_contexts=[1024], concurrency=[1], duration=0.5, max_output=64)
    assert counted.notes is None


def _decode_lines(journal: Path) -> list[tuple[int, int]]:
    """The (context, concurrency) of every decode line in a journal, in order."""
    keys = []
    for line in journal.read_bytes().splitlines():
        entry = json.loads(line)
        if entry["kind"] == "decode":
            keys.append((entry["cell"]["context_tokens"], entry["cell"]["concurrency"]))
    return keys


def test_sigkill_mid_matrix_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    config = tmp_path / "sim.json"
    config.write_bytes(msgspec.json.encode(SimConfig(max_model_len=4096, base_step_ms=5, per_seq_ms=0)))
    out = tmp_path / "run.json"
    journal = journal_path(out)
    command = [sys.executable, "-m", "runner", "simulate", "--sim-config", str(config), "--contexts", "1K",
               "--prefill-contexts", "1K", "--concurrency", "1,2,3,4,5", "--duration", "1", "--max-output", "64",
               "--out", str(out)]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (journal.exists() and len(_decode_lines(journal)) >= 2):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()[1]
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    before = journal.read_bytes()
    kept = _decode_lines(journal)
    assert 2 <= len(kept) < 5
    # The journal is written first and the bundle right after, so a kill between the two leaves the bundle
    # one cell behind; it is still valid, and --resume rebuilds it from the journal.
    in_bundle = [(c.context_tokens, c.concurrency) for c in decode_bundle(out.read_bytes()).decode]
    assert in_bundle in (kept, kept[:-1])

    done = subprocess.run(command + ["--resume"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert journal.read_bytes().startswith(before)
    lines = _decode_lines(journal)
    assert sorted(lines) == [(1024, n) for n in range(1, 6)]  # each cell measured exactly once
    bundle = decode_bundle(out.read_bytes())
    # Measured, not failed; on a busy machine the cross-check may find a window distorted.
    assert all(c.status in ("Valid", "Distorted") for c in bundle.decode)
    assert [p.status for p in bundle.prefill] == ["Valid"]


def test_long_prompts_never_repeat_a_passage(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt many times longer than the first pool of filler holds no passage twice."""
    from runner import prompts
    from runner.client import Client

    monkeypatch.setattr(prompts, "POOL_TOKENS", 300)

    async def build(base_url: str) -> list[int]:
        client = Client(base_url, api_key=None)
        try:
            maker = prompts.PromptMaker(client, "sim-model", "vllm", "abcd")
            assert await maker.setup() == "ids"
            return (await maker.make(6000, 3)).prompt
        finally:
            await client.aclose()

    with running_simulator(SimConfig(max_model_len=8192)) as server:
        ids = asyncio.run(build(server.base_url))
    assert len(ids) == 6000  # token-id prompts get no BOS from the simulator
    window = 40
    passages = [tuple(ids[i:i + window]) for i in range(len(ids) - window)]
    assert len(set(passages)) == len(passages), "some 40-token passage occurs twice"
