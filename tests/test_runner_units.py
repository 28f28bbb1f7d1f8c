"""Unit tests of the runner's pure parts: redaction, loops, metrics, options, plan, figures, journal."""

from __future__ import annotations

import datetime as dt
import random
import re
import statistics

import pytest

from runner.bundle.ids import run_id
from runner.bundle.redact import redact
from runner.bundle.schema import Bundle, DecodeCell, Engine, PrefillPoint
from runner.cell import decode_figures
from runner.client import Trace, server_root
from runner.errors import JournalError, OptionError
from runner.hardware import marketed_gb
from runner.journal import Header, Journal, journal_path
from runner.launch import parse_launch
from runner.loops import LoopDetector
from runner.metrics import (
    busy_requests,
    kv_capacity_tokens,
    parse_prometheus,
    queue_length,
)
from runner.options import parse_list, parse_tokens
from runner.plan import (
    PlanSpec,
    default_contexts,
    default_prefill_contexts,
    over_capacity,
)

REDACTION_CASES = [
    ("vllm serve m --api-key sk-abc123 --port 8000", "vllm serve m --api-key <redacted> --port 8000"),
    ("vllm serve m --api-key=hunter2", "vllm serve m --api-key=<redacted>"),
    ('vllm serve m --api-key "two words"', "vllm serve m --api-key <redacted>"),
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz vllm serve m", "HF_TOKEN=<redacted> vllm serve m"),
    ("OPENAI_API_KEY=xyz CUDA_VISIBLE_DEVICES=0,1 vllm serve m", "OPENAI_API_KEY=<redacted> CUDA_VISIBLE_DEVICES=0,1 vllm serve m"),
    ("server --hf-token abc --token=def", "server --hf-token <redacted> --token=<redacted>"),
    ("curl -H 'Authorization: Bearer abc.def' x", "curl -H 'Authorization: Bearer <redacted>' x"),
    ('serve --auth-header "Bearer tokSECRET"', 'serve --auth-header <redacted>'),  # an auth-named option: all its values
    ("curl -H 'x-api-key: abc' x", "curl -H 'x-api-key: <redacted>' x"),
    ("--model https://user:pass@example.com/m", "--model https://<redacted>@example.com/m"),
    ("fetch https://h.example/m?api_key=abc&x=1", "fetch https://h.example/m?api_key=<redacted>&x=1"),
    ("fetch https://h.example/m?token=abc", "fetch https://h.example/m?token=<redacted>"),
    ("echo sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "echo <redacted>"),
    ("echo ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ", "echo <redacted>"),
    # Look-alikes that are not secrets stay.
    ("vllm serve m --max-num-batched-tokens 8192 --tokenizer t", "vllm serve m --max-num-batched-tokens 8192 --tokenizer t"),
    ("vllm serve m --max-tokens 10 --tokenizer-mode auto", "vllm serve m --max-tokens 10 --tokenizer-mode auto"),
]


@pytest.mark.parametrize(("command", "expected"), REDACTION_CASES)
def test_redact(command: str, expected: str) -> None:
    assert redact(command) == expected


def test_redact_given_secret_anywhere() -> None:
    assert redact("error: key plainvalue rejected", ["plainvalue"]) == "error: key <redacted> rejected"


def _feed(text: str, chunk: int = 7) -> bool:
    detector = LoopDetector()
    return any(detector.feed(text[i : i + chunk]) for i in range(0, len(text), chunk))


def _random_text(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghij klmnop") for _ in range(n))


@pytest.mark.parametrize("period", [1, 2, 19, 500, 1024, 2000])
def test_loop_detected(period: int) -> None:
    unit = _random_text(period, seed=period)
    repeats = max(4, -(-4096 // period)) + 1
    assert _feed(_random_text(3000) + unit * repeats)


def test_loop_needs_four_repeats_and_4096_chars() -> None:
    assert not _feed(_random_text(20000))
    assert not _feed(_random_text(3000, 1) + _random_text(1500, 2) * 3)  # 3 repeats of 1500
    assert not _feed(_random_text(100, 3) + "abc" * 1300)  # 3900 characters of repetition
    assert _feed(_random_text(100, 3) + "abc" * 1400)


def test_parse_tokens_and_lists() -> None:
    assert parse_tokens("8K") == 8192
    assert parse_tokens("1019k") == 1043456
    assert parse_tokens("3000") == 3000
    assert parse_list("16K,8K,8K") == [8192, 16384]
    assert parse_list(" 8K , 1K ") == [1024, 8192]
    with pytest.raises(OptionError):
        parse_tokens("eight")
    for text in ("8K,,16K", "8K,", ",8K", "8K, ,16K"):
        with pytest.raises(OptionError, match=f"empty item in {re.escape(repr(text))}"):
            parse_list(text)


def test_default_contexts_match_the_seeds() -> None:
    contexts = default_contexts(1048576, 4096)
    assert [c // 1024 for c in contexts] == [8, 16, 32, 64, 128, 256, 512, 1019]
    assert default_contexts(262144, 4096)[-1] == 251 * 1024
    assert default_prefill_contexts(contexts, 1048576)[-1] == 1048576
    assert default_contexts(4096, 1024) == [2048]


def test_over_capacity() -> None:
    assert over_capacity(8192, 128, 4096, 1_000_000)
    assert not over_capacity(8192, 64, 4096, 1_000_000)
    assert not over_capacity(8192, 128, 4096, None)


def test_prometheus_parsing() -> None:
    text = (
        "# HELP vllm:num_requests_waiting x\n"
        'vllm:num_requests_waiting{model_name="m"} 3.0\n'
        'vllm:cache_config_info{block_size="16",num_gpu_blocks="1000",other="a,b"} 1.0\n'
        "garbage line\n"
    )
    samples = parse_prometheus(text)
    assert queue_length(samples) == 3.0
    assert kv_capacity_tokens(samples) == 16000
    assert queue_length(parse_prometheus("llamacpp:requests_deferred 2\n")) == 2
    assert queue_length(parse_prometheus("other 1\n")) is None
    data_parallel = "".join(  # vLLM --data-parallel-size 2: a cache per engine
        f'vllm:cache_config_info{{block_size="16",engine="{e}",num_gpu_blocks="1000"}} 1.0\n' for e in (0, 1))
    assert kv_capacity_tokens(parse_prometheus(data_parallel)) == 32000
    assert busy_requests(parse_prometheus('vllm:num_requests_running{engine="0"} 2\n' 'vllm:num_requests_waiting 1\n')) == 3
    assert busy_requests(parse_prometheus("llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n")) == 0
    assert busy_requests(samples) is None  # a queue gauge alone does not say the engine is idle


def _trace(start: float, times: list[float], counts: list[int] | None = None, end: float | None = None) -> Trace:
    trace = Trace()
    trace.start, trace.times, trace.counts = start, times, counts or [1] * len(times)
    trace.tokens = sum(trace.counts)
    trace.finished, trace.end = end is not None, end
    return trace


def test_decode_figures_by_definition() -> None:
    # Two requests over a 10 s window: one at 10 tok/s, one at 5 tok/s with 2 tokens a chunk.
    a = _trace(0.0, [0.1 * (i + 1) for i in range(100)])
    b = _trace(0.0, [0.4 * (i + 1) for i in range(25)], [2] * 25)
    late = _trace(9.5, [10.5])  # its first token came after the window: not counted
    figures = decode_figures([a, b, late], 0.0, 10.0)
    assert figures.output_tokens == 150
    assert figures.total_tok_s == pytest.approx(15.0)
    assert figures.per_request_tok_s == pytest.approx(statistics.median([99 / 9.9, 49 / 9.6]))
    assert figures.ttft_ms == pytest.approx(250.0)
    assert figures.avg_active == pytest.approx((9.9 + 9.6) / 10)
    assert figures.completed == 0
    done = decode_figures([_trace(0.0, [1.0, 2.0, 3.0], end=3.0)], 0.0, 10.0)
    assert done.completed == 1 and done.avg_active == pytest.approx(0.2)


@pytest.mark.parametrize(("mib", "expected"), [
    (143_771, 141),  # H200: the seeds print 141 GB
    (81_559, 80),  # H100 SXM
    (183_359, 180),  # B200
    (24_564, 24),  # RTX 4090
    (46_068, 45),  # L40S: 45 GiB is 6 % under its 48 GB, too far to snap
    (110_000, 107),  # nothing sold near it: whole GiB
])
def test_nvml_memory_reads_as_the_marketed_size(mib: int, expected: float) -> None:
    assert marketed_gb(mib * 2**20) == expected


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


def test_slug_and_server_root() -> None:
    assert run_id("Qwen3/Qwen3-8B", "H200 NVL", "vllm", "2026-09-03") == "qwen3-qwen3-8b-h200-nvl-vllm-2026-09-03"
    assert server_root("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000"
    assert server_root("https://h.example/api/v1/") == "https://h.example/api"


def test_journal_survives_a_torn_last_line(tmp_path) -> None:
    path = journal_path(tmp_path / "run.json")
    header = Header(bundle=Bundle(id="x", model="m", engine=Engine(name="e"), measured_at=dt.datetime.now(dt.timezone.utc)),
                    plan=PlanSpec(contexts=[1024], prefill_contexts=[1024], concurrency=[1], duration=1, max_output=8))
    journal = Journal.create(path, header)
    journal.record(PrefillPoint(context_tokens=1024, status="Valid", prompt_tok_s=1.0, ttft_ms=1.0))
    journal.record(DecodeCell(context_tokens=1024, concurrency=1, status="Failed", error="boom"))
    journal.close()  # as a crashed runner's lock goes with it
    with path.open("ab") as handle:
        handle.write(b'{"kind":"decode","cell":{"context_tok')
    again = Journal.load(path)
    assert list(again.points) == [1024]
    assert not again.finished(again.cells[(1024, 1)])  # Failed cells are measured again
    assert len(again.bundle().decode) == 1
    with pytest.raises(JournalError):
        Journal.create(path, header)
