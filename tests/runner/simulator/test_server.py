"""Tests of the simulated inference server: API shapes, scheduling, timings and faults."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import msgspec
import pytest

from runner.simulator import (
    Faults,
    SimConfig,
    SimServer,
    running_simulator,
    start_simulator,
)
from runner.simulator.tokenizer import Tokenizer

FAST = {"base_step_ms": 2.0, "per_seq_ms": 0.0, "per_ktoken_ms": 0.0}
USAGE = {"include_usage": True, "continuous_usage_stats": True}


@contextmanager
def simulator(**settings: object) -> Iterator[tuple[SimServer, httpx.Client]]:
    """A simulator in a background thread (fast decode unless overridden) and a client for it."""
    config = msgspec.convert({**FAST, **settings}, SimConfig)
    with running_simulator(config) as server, httpx.Client(base_url=server.root_url,
                                                            timeout=10) as client:
        yield server, client


def sse(client: httpx.Client, path: str, body: dict[str, object]) -> list[tuple[float, str]]:
    """POST a streaming request; the arrival time and payload of every `data:` line."""
    events: list[tuple[float, str]] = []
    with client.stream("POST", path, json={**body, "stream": True}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if line:
                assert line.startswith("data: "), line
                events.append((time.monotonic(), line.removeprefix("data: ")))
    return events


def chunks(events: list[tuple[float, str]]) -> list[dict]:
    """The JSON chunks of an SSE stream that ended with [DONE]."""
    assert events[-1][1] == "[DONE]"
    return [json.loads(payload) for _, payload in events[:-1]]


def test_models_health_version_and_unknown_routes() -> None:
    """The probe endpoints answer in vLLM's shapes; unknown paths and methods are refused."""
    with simulator(model="m1", max_model_len=4096, version="9.9") as (_, client):
        card = client.get("/v1/models").json()["data"][0]
        assert (card["id"], card["max_model_len"]) == ("m1", 4096)
        assert client.get("/health").status_code == 200
        assert client.get("/version").json() == {"version": "9.9"}
        assert client.get("/nope").status_code == 404
        assert client.get("/v1/completions").status_code == 405


def test_tokenizer_round_trip_and_lengths_differ_from_characters() -> None:
    """Tokens are neither characters nor bytes, BOS leads text prompts, detokenize inverts tokenize."""
    text = "the theory is there, and ünïcode 日本 too"
    with simulator() as (_, client):
        tok = client.post("/tokenize", json={"model": "sim-model", "prompt": text}).json()
        assert tok["count"] == len(tok["tokens"]) and tok["max_model_len"] == 65536
        assert tok["count"] != len(text) and tok["count"] != len(text.encode())
        assert tok["tokens"][0] == Tokenizer().bos_id
        assert client.post("/detokenize", json={"tokens": tok["tokens"]}).json() == {"prompt": text}
        plain = client.post("/tokenize", json={"prompt": text, "add_special_tokens": False}).json()
        assert plain["tokens"] == tok["tokens"][1:]
        assert client.post("/detokenize", json={"tokens": [10**6]}).status_code == 400


def test_non_streaming_usage_counts_prompt_exactly() -> None:
    """usage.prompt_tokens equals /tokenize's count (text) or the ids sent; chat works too."""
    with simulator() as (_, client):
        text = "measure the prompt length in server tokens"
        count = client.post("/tokenize", json={"prompt": text}).json()["count"]
        body = client.post("/v1/completions", json={"prompt": text, "max_tokens": 7}).json()
        assert body["object"] == "text_completion" and body["model"] == "sim-model"
        assert body["usage"]["prompt_tokens"] == count
        assert body["usage"]["completion_tokens"] == 7
        assert body["choices"][0]["finish_reason"] == "length"
        ids = client.post("/v1/completions", json={"prompt": [5, 6, 7, 8], "max_tokens": 3}).json()
        assert ids["usage"] == {"prompt_tokens": 4, "total_tokens": 7, "completion_tokens": 3,
                                "prompt_tokens_details": {"cached_tokens": 0}}
        chat = client.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 4}).json()
        assert chat["object"] == "chat.completion" and chat["usage"]["completion_tokens"] == 4
        assert chat["choices"][0]["message"]["role"] == "assistant"


def test_completion_stream_carries_cumulative_usage_and_done() -> None:
    """continuous_usage_stats puts cumulative usage on every chunk, then a usage-only chunk and [DONE]."""
    with simulator() as (_, client):
        events = sse(client, "/v1/completions", {"prompt": [1] * 40, "max_tokens": 12,
                                                 "ignore_eos": True, "stream_options": USAGE})
        parts = chunks(events)
        tokens = parts[:-1]
        assert [c["usage"]["completion_tokens"] for c in tokens] == list(range(1, 13))
        assert all(c["usage"]["prompt_tokens"] == 40 for c in parts)
        assert all(c["usage"]["total_tokens"] == 40 + c["usage"]["completion_tokens"] for c in parts)
        assert [c["choices"][0]["finish_reason"] for c in tokens] == [None] * 11 + ["length"]
        assert all(c["object"] == "text_completion" and c["choices"][0]["text"] for c in tokens)
        assert parts[-1]["choices"] == [] and parts[-1]["usage"]["completion_tokens"] == 12


def test_chat_stream_has_role_chunk_and_no_usage_unless_asked() -> None:
    """A chat stream opens with the assistant role chunk and carries no usage unless asked."""
    with simulator() as (_, client):
        parts = chunks(sse(client, "/v1/chat/completions", {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "max_tokens": 5}))
        assert parts[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert len(parts) == 6 and all("usage" not in c for c in parts)
        assert all(c["object"] == "chat.completion.chunk" for c in parts)


def test_tokens_per_chunk_sends_several_tokens_per_event() -> None:
    """Speculative-style chunks: the first token alone (prefill), then tokens_per_chunk per event."""
    with simulator(tokens_per_chunk=3) as (_, client):
        parts = chunks(sse(client, "/v1/completions", {"prompt": "x", "max_tokens": 10,
                                                       "stream_options": USAGE}))
        assert [c["usage"]["completion_tokens"] for c in parts[:-1]] == [1, 4, 7, 10]


def test_eos_stops_early_unless_ignored() -> None:
    """eos_after_tokens ends a request with finish_reason stop, unless ignore_eos is set."""
    with simulator(eos_after_tokens=5) as (_, client):
        stop = client.post("/v1/completions", json={"prompt": "x", "max_tokens": 20}).json()
        assert (stop["usage"]["completion_tokens"], stop["choices"][0]["finish_reason"]) == (5, "stop")
        full = client.post("/v1/completions", json={"prompt": "x", "max_tokens": 20,
                                                    "ignore_eos": True}).json()
        assert full["usage"]["completion_tokens"] == 20


def test_unknown_model_is_404_and_too_long_is_400() -> None:
    """vLLM's refusals: unknown model 404, prompt + max_tokens over max_model_len 400."""
    with simulator(max_model_len=256) as (_, client):
        missing = client.post("/v1/completions", json={"model": "other", "prompt": "x"})
        assert missing.status_code == 404
        assert missing.json()["type"] == "NotFoundError" and "`other`" in missing.json()["message"]
        too_long = client.post("/v1/completions", json={"prompt": [1] * 200, "max_tokens": 100})
        assert too_long.status_code == 400
        assert "maximum context length is 256" in too_long.json()["message"]
        assert client.post("/v1/completions", json={"prompt": [1] * 256}).status_code == 400
        default = client.post("/v1/completions", json={"prompt": [1] * 250}).json()
        assert default["usage"]["completion_tokens"] == 6


def test_metrics_use_vllm_names() -> None:
    """The metrics the runner reads exist under vLLM's names and labels."""
    with simulator(kv_capacity_tokens=8192, max_model_len=4096) as (_, client):
        client.post("/v1/completions", json={"prompt": [1] * 10, "max_tokens": 3})
        text = client.get("/metrics").text
        assert 'vllm:cache_config_info{block_size="16",' in text
        assert 'num_gpu_blocks="512"} 1.0' in text
        for name in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"):
            assert f'vllm:{name}{{engine="0",model_name="sim-model"}} 0.0' in text
        assert 'vllm:generation_tokens_total{engine="0",model_name="sim-model"} 3.0' in text
        assert 'vllm:prompt_tokens_total{engine="0",model_name="sim-model"} 10.0' in text


async def _first_tokens(server: SimServer, bodies: list[dict[str, object]]) -> list[float]:
    """Run streams at once to their end; the time each one got its first chunk."""
    async def one(client: httpx.AsyncClient, body: dict[str, object]) -> float:
        """First-chunk time of one stream read to its end."""
        arrivals: list[float] = []
        async with client.stream("POST", "/v1/completions", json={**body, "stream": True}) as r:
            async for _ in r.aiter_lines():
                arrivals.append(time.monotonic())
        return arrivals[0]

    async with httpx.AsyncClient(base_url=server.root_url, timeout=10) as client:
        return list(await asyncio.gather(*(one(client, b) for b in bodies)))


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll `condition` until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.005)


def test_requests_beyond_max_num_seqs_wait_in_queue() -> None:
    """Beyond max_num_seqs requests wait (gauge > 0) and start only when a slot frees."""
    async def scenario() -> None:
        """Four streams against two slots."""
        server = await start_simulator(SimConfig(max_num_seqs=2, base_step_ms=10, per_seq_ms=0))
        body = {"prompt": [1, 2, 3], "max_tokens": 50}
        task = asyncio.create_task(_first_tokens(server, [body] * 4))
        await _until(lambda: server.stats().waiting == 2)
        assert server.stats().running == 2
        firsts = await task
        start = min(firsts)
        late = sorted(t - start for t in firsts)[2:]
        assert all(t > 0.3 for t in late), late
        await server.close()

    asyncio.run(scenario())


def test_kv_capacity_limits_admission() -> None:
    """A request whose prompt + max_tokens blocks do not fit waits, though slots are free."""
    async def scenario() -> None:
        """Three requests against a KV cache that holds two."""
        config = SimConfig(kv_capacity_tokens=1024, max_model_len=512, base_step_ms=10,
                           per_seq_ms=0)
        server = await start_simulator(config)
        body = {"prompt": [1] * 100, "max_tokens": 300}
        task = asyncio.create_task(_first_tokens(server, [body] * 3))
        await _until(lambda: server.stats().waiting + server.stats().running == 3 and server.stats().running >= 2)
        await asyncio.sleep(0.05)  # five scheduler steps: time enough to admit the third if blocks allowed it
        stats = server.stats()
        assert (stats.running, stats.waiting) == (2, 1)
        assert stats.kv_usage == pytest.approx(50 / 64)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await server.close()

    asyncio.run(scenario())


def test_prefix_cache_skips_prefill_of_seen_prompts() -> None:
    """A repeated prompt prefills only its last block; a different first token shares nothing."""
    with simulator(prefill_tok_s=5000) as (_, client):
        prompt = [7] * 1000
        body = {"prompt": prompt, "max_tokens": 1, "stream_options": USAGE}
        cold_start = time.monotonic()
        cold = sse(client, "/v1/completions", body)
        warm_start = time.monotonic()
        warm = sse(client, "/v1/completions", body)
        cold_ttft, warm_ttft = cold[0][0] - cold_start, warm[0][0] - warm_start
        assert 0.19 < cold_ttft < 0.3 and warm_ttft < 0.05, (cold_ttft, warm_ttft)
        assert json.loads(warm[-2][1])["usage"]["prompt_tokens_details"]["cached_tokens"] == 992
        other = sse(client, "/v1/completions", {**body, "prompt": [8] + prompt[1:]})
        assert json.loads(other[-2][1])["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_loop_after_tokens_repeats_loop_text() -> None:
    """After loop_after_tokens the output is an exact repetition of loop_text."""
    with simulator(loop_after_tokens=10, loop_text=" round and round") as (_, client):
        text = client.post("/v1/completions", json={"prompt": "x", "max_tokens": 80}).json()[
            "choices"][0]["text"]
        tail = text[text.index(" round and round"):]
        assert len(tail) > 4 * len(" round and round")
        assert (" round and round" * 20).startswith(tail)
        head = client.post("/v1/completions", json={"prompt": "x", "max_tokens": 10}).json()
        assert "round" not in head["choices"][0]["text"]


def test_single_stream_decode_rate_matches_step_time() -> None:
    """A lone stream's measured tok/s is within 3 % of 1000 / step_ms."""
    config = {"base_step_ms": 8.0, "per_seq_ms": 2.0, "per_ktoken_ms": 0.0}
    with simulator(**config) as (server, client):
        events = sse(client, "/v1/completions", {"prompt": [1] * 20, "max_tokens": 120})
        times = [t for t, payload in events[:-1]]
        rate = (len(times) - 1) / (times[-1] - times[0])
        assert rate == pytest.approx(1000 / 10.0, rel=0.03)
        assert server.config.step_seconds(1, 0) == pytest.approx(0.010)


def test_batch_total_rate_follows_step_model() -> None:
    """Total tok/s of a batch follows batch * 1000 / step_ms."""
    async def scenario() -> None:
        """Eight streams counted for one second."""
        config = SimConfig(base_step_ms=10, per_seq_ms=1.25, per_ktoken_ms=0)
        server = await start_simulator(config)
        async with httpx.AsyncClient(base_url=server.root_url, timeout=10) as client:
            async def count(until: float) -> int:
                """Chunks one stream receives before `until`."""
                body = {"prompt": [3] * 10, "max_tokens": 1000, "stream": True}
                async with client.stream("POST", "/v1/completions", json=body) as r:
                    n = 0
                    async for line in r.aiter_lines():
                        n += line.startswith("data: {")
                        if time.monotonic() >= until:
                            return n
                return n

            start = time.monotonic()
            totals = await asyncio.gather(*(count(start + 1.0) for _ in range(8)))
        await server.close()
        total_rate = sum(totals) / (time.monotonic() - start)
        assert total_rate == pytest.approx(8 * 1000 / (10 + 8 * 1.25), rel=0.08)

    asyncio.run(scenario())


def test_client_disconnect_frees_its_slot() -> None:
    """A client hanging up aborts its request at once, freeing slot and KV blocks."""
    with simulator(base_step_ms=10) as (server, client):
        with client.stream("POST", "/v1/completions",
                           json={"prompt": "x", "max_tokens": 1000, "stream": True}) as r:
            lines = r.iter_lines()  # kept: a dropped generator would close the response
            next(lines)
            assert server.stats().running == 1
        deadline = time.monotonic() + 2
        while server.stats().running and time.monotonic() < deadline:
            time.sleep(0.01)
        stats = server.stats()
        assert (stats.running, stats.kv_usage, stats.finished_total.get("abort")) == (0, 0.0, 1)


def test_error_faults_answer_with_status() -> None:
    """error_next fails the next K requests, error_fraction a share; Faults() clears."""
    with simulator(faults=Faults(error_next=2, error_status=429)) as (server, client):
        body = {"prompt": "x", "max_tokens": 2}
        codes = [client.post("/v1/completions", json=body).status_code for _ in range(3)]
        assert codes == [429, 429, 200]
        server.set_faults(error_fraction=1.0, error_status=500)
        failed = client.post("/v1/chat/completions",
                             json={"messages": [{"role": "user", "content": "x"}]})
        assert failed.status_code == 500 and failed.json()["code"] == 500
        server.set_faults(Faults())
        assert client.post("/v1/completions", json=body).status_code == 200


def test_reset_fault_cuts_stream() -> None:
    """reset_after_tokens cuts the stream with a TCP reset."""
    with simulator(faults=Faults(reset_after_tokens=5)) as (_, client):
        received = 0
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            with client.stream("POST", "/v1/completions",
                               json={"prompt": "x", "max_tokens": 50, "stream": True}) as r:
                for line in r.iter_lines():
                    received += line.startswith("data: {")
        assert received <= 5


def test_stall_fault_pauses_stream() -> None:
    """stall_after_tokens makes the stream silent for stall_s once."""
    with simulator(faults=Faults(stall_after_tokens=3, stall_s=0.3)) as (_, client):
        times = [t for t, _ in sse(client, "/v1/completions", {"prompt": "x", "max_tokens": 6})]
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert gaps[2] >= 0.29 and max(gaps[:2]) < 0.1, gaps


def test_malformed_fault_inserts_invalid_events() -> None:
    """malformed_every inserts an invalid JSON event before every n-th event."""
    with simulator(faults=Faults(malformed_every=2)) as (_, client):
        payloads = [p for _, p in sse(client, "/v1/completions", {"prompt": "x", "max_tokens": 6})]
        bad = [p for p in payloads if p != "[DONE]" and not _is_json(p)]
        assert len(bad) == 3 and len(payloads) - len(bad) == 7


def _is_json(text: str) -> bool:
    """Whether `text` parses as JSON."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("fault", [Faults(die_after_tokens=20), Faults(die_after_s=0.2)])
def test_death_fault_drops_connections_and_port(fault: Faults) -> None:
    """A dying server resets live streams and refuses new connections."""
    with simulator(base_step_ms=10) as (server, client):
        server.set_faults(fault)
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            sse(client, "/v1/completions", {"prompt": "x", "max_tokens": 100})
        assert server.dead
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.root_url + "/health", timeout=2)


def test_never_ready_until_cleared_over_http() -> None:
    """never_ready answers 503 until cleared; /_sim/faults merges, validates and clears faults."""
    with simulator(faults=Faults(never_ready=True)) as (server, client):
        assert client.get("/health").status_code == 503
        assert client.get("/v1/models").status_code == 503
        assert client.get("/_sim/faults").json() == {"never_ready": True}
        set_ = client.post("/_sim/faults", json={"never_ready": False, "wrong_model": "impostor"})
        assert set_.json() == {"wrong_model": "impostor"} and server.faults.wrong_model == "impostor"
        assert client.get("/health").status_code == 200
        answer = client.post("/v1/completions", json={"prompt": "x", "max_tokens": 2}).json()
        assert answer["model"] == "impostor"
        assert client.post("/_sim/faults", json={"stall_s": -1}).status_code == 400
        assert client.post("/_sim/faults", json={"stal_s": 1}).status_code == 400  # a typo is no healthy server
        client.delete("/_sim/faults")
        assert server.faults == Faults()


def test_serve_prints_url_and_stops_on_interrupt() -> None:
    """serve() prints its base URL and exits cleanly on Ctrl-C."""
    code = ("from runner.simulator import SimConfig, serve; "
            "serve(SimConfig(), '127.0.0.1', 0)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        assert httpx.get(url + "/models", timeout=5).json()["data"][0]["id"] == "sim-model"
        proc.send_signal(subprocess.signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
