"""Server facts: readiness, the served model, max length, KV capacity, engine and version.

Each engine exposes these differently: vLLM (/v1/models max_model_len, /version,
vllm:cache_config_info), SGLang (/get_server_info), llama.cpp (/props, /slots), TGI
(/info), TensorRT-LLM (/version). Whatever answers first and makes sense wins.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, Literal

import msgspec

from runner import metrics
from runner.bundle.schema import MAX_TOKENS
from runner.bundle.terminal_text import printable
from runner.client import Client, UntrustedCertificate
from runner.endpoints import MetricsEndpoints
from runner.errors import RequestFailed, ServerError
from runner.launch import parse_launch

# Engines that name themselves in /v1/models' owned_by, spelled as pages print them.
ENGINE_BY_OWNER = {"tensorrt_llm": "tensorrt-llm"}
# An error naming the served models names this many, each cut to this many characters.
MODELS_SHOWN = 10
MODEL_ID_SHOWN = 200
# A version or build string a server reports is kept to this many characters.
FACT_CHARS = 200


class ServerFacts(msgspec.Struct, kw_only=True):
    """What the runner learned about the server before measuring."""

    base_url: str
    model: str
    models: list[str]
    engine: str = "unknown"
    version: str | None = None
    build: str | None = None
    max_model_len: int | None = None
    kv_capacity: int | None = None
    kv_source: str | None = None
    queue_gauge: bool = False
    slots: int | None = None
    simulated: bool = False
    ignore_eos: bool = True
    # How streamed tokens are counted: "usage" or "timings" (a running count), or "chunks".
    token_counts: str | None = None
    # The API measured through, once the first request settled it.
    api: Literal["completions", "chat"] = "completions"


async def wait_ready(client: Client, timeout: float) -> list[dict]:
    """Poll /models until the server lists at least one model; the list of model entries."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        try:
            response = await client.get("/models", timeout=5.0)
            if response.status_code == 200:
                entries = model_entries(response.json())
                if entries:
                    return entries
                last = f"no model listed with an id: {response.text[:80]!r}"
            else:
                last = f"HTTP {response.status_code}"
        except ValueError:
            last = f"/models did not answer JSON: {response.text[:80]!r}"
        except UntrustedCertificate as exc:  # no retry makes a certificate trusted
            raise ServerError(str(exc)) from None
        except RequestFailed as exc:
            last = str(exc)
        if time.monotonic() >= deadline:
            raise ServerError(f"the server at {client.base_url} did not become ready within {timeout:g} s (last: {last})")
        await asyncio.sleep(min(1.0, max(0.05, deadline - time.monotonic())))


def model_entries(document: Any) -> list[dict]:
    """The model cards of a /models answer that carry an id; anything else in it is ignored."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        return []
    return [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]]


def choose_model(entries: list[dict], wanted: str | None, base_url: str) -> str:
    """The model to measure: `wanted` if the server lists it, else the server's only model."""
    ids = [e["id"] for e in entries]
    if wanted:
        if wanted not in ids:
            raise ServerError(f"model {printable(wanted, MODEL_ID_SHOWN)!r} is not served at {base_url} "
                              f"(it serves: {_some_models(ids)})")
        return wanted
    if len(ids) != 1:
        raise ServerError(f"the server at {base_url} serves several models ({_some_models(ids)}); choose one with --model")
    return ids[0]


def _some_models(ids: list[str]) -> str:
    """The first MODELS_SHOWN model ids, each shortened and made printable, and how many more there are."""
    shown = ", ".join(printable(i, MODEL_ID_SHOWN) for i in ids[:MODELS_SHOWN])
    return shown + (f" and {len(ids) - MODELS_SHOWN:,} more" if len(ids) > MODELS_SHOWN else "")


def _int(value: Any) -> int | None:
    """A positive whole number from a JSON value (a number or its text), or None for anything else:
    a fraction, an infinity, true, or a claim past the bundle's limit on a token count."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value) if isinstance(value, str) else value
        if isinstance(number, float):
            if not math.isfinite(number) or not number.is_integer():
                return None
            number = int(number)
    except ValueError:
        return None
    return number if 0 < number <= MAX_TOKENS else None


def _dict(value: Any) -> dict:
    """A JSON object, or an empty one in place of anything else."""
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    """A version or build string from a JSON value (numbers written out), cut to FACT_CHARS; None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float)):
        return str(value)[:FACT_CHARS] or None
    return None


async def probe_server(client: Client, wanted_model: str | None, ready_timeout: float,
                       kv_capacity: int | None = None, launch_command: str | None = None,
                       endpoints: MetricsEndpoints | None = None) -> ServerFacts:
    """Wait for the server, then gather every fact the run and the bundle need.

    `launch_command` settles what the API cannot tell: whether llama.cpp's slots share one KV buffer.
    """
    entries = await wait_ready(client, ready_timeout)
    model = choose_model(entries, wanted_model, client.base_url)
    entry = next(e for e in entries if e.get("id") == model)
    facts = ServerFacts(base_url=client.base_url, model=model, models=[e["id"] for e in entries])
    facts.max_model_len = _int(entry.get("max_model_len"))
    owner = (_text(entry.get("owned_by")) or "").lower()

    version, props, sglang, tgi = await asyncio.gather(
        client.get_json("/version", root=True), client.get_json("/props", root=True),
        client.get_json("/get_server_info", root=True), client.get_json("/info", root=True),
    )
    if isinstance(props, dict) and "default_generation_settings" in props:
        _llama_cpp(facts, props, entry, parse_launch(launch_command).llama_kv_unified)
        slots = await client.get_json("/slots", root=True)
        if isinstance(slots, list) and slots:
            facts.slots = len(slots)
    elif isinstance(sglang, dict) and ({"max_total_num_tokens", "internal_states"} & sglang.keys() or owner == "sglang"):
        facts.engine = "sglang"
        facts.version = _text(sglang.get("version")) or _text(_dict(version).get("version"))
        facts.max_model_len = facts.max_model_len or _int(sglang.get("context_length"))
        facts.kv_capacity = _sglang_kv_tokens(sglang)
        facts.kv_source = "sglang /get_server_info" if facts.kv_capacity else None
    elif isinstance(tgi, dict) and "model_id" in tgi:
        facts.engine, facts.version, facts.build = "tgi", _text(tgi.get("version")), _text(tgi.get("sha"))
        facts.max_model_len = facts.max_model_len or _int(tgi.get("max_total_tokens"))
        facts.kv_capacity = _int(tgi.get("max_batch_total_tokens"))
        facts.kv_source = "tgi /info" if facts.kv_capacity else None
        facts.ignore_eos = False
    elif isinstance(version, dict) and _text(version.get("version")):
        facts.engine = ENGINE_BY_OWNER.get(owner, owner if owner and owner not in ("system", "organization-owner") else "vllm")
        facts.version = _text(version["version"])
        facts.simulated = bool(version.get("simulator")) or facts.version.endswith("+sim")
    else:
        facts.engine = owner or "unknown"

    samples = await (endpoints or MetricsEndpoints(client)).samples()
    if samples:
        facts.queue_gauge = metrics.queue_length(samples) is not None
        from_metrics = metrics.kv_capacity_tokens(samples)
        if from_metrics:
            facts.kv_capacity, facts.kv_source = from_metrics, "vllm:cache_config_info"
    if kv_capacity:
        facts.kv_capacity, facts.kv_source = kv_capacity, "--kv-capacity"
    return facts


def _sglang_kv_tokens(info: dict) -> int | None:
    """SGLang's KV pool in tokens, over all data-parallel ranks.

    Releases put max_total_num_tokens at the top level (rank 0's scheduler) or in each
    rank's `internal_states`; every data-parallel rank holds a pool of that size.
    """
    states = info.get("internal_states")
    ranks = [s for s in states if isinstance(s, dict)] if isinstance(states, list) else []
    per_rank = _int(info.get("max_total_num_tokens")) or next(
        (n for n in (_int(s.get("max_total_num_tokens")) for s in ranks) if n), None)
    return _int(per_rank * (_int(info.get("dp_size")) or 1)) if per_rank else None


def _llama_cpp(facts: ServerFacts, props: dict, entry: dict, unified: bool | None) -> None:
    """Facts from llama.cpp's /props: per-slot context is the max length; the KV cache is that
    context once when the slots share one buffer (`unified`), else once per slot.

    The API looks the same either way, so with `unified` unknown the split cache is assumed
    and the source says so.
    """
    facts.engine = "llama.cpp"
    facts.build = _text(props.get("build_info"))
    facts.version = facts.build
    per_slot = _int(_dict(props.get("default_generation_settings")).get("n_ctx"))
    slots = _int(props.get("total_slots"))
    facts.max_model_len = per_slot or _int(_dict(entry.get("meta")).get("n_ctx_train"))
    facts.slots = slots
    if per_slot and unified:
        facts.kv_capacity, facts.kv_source = per_slot, "llama.cpp /props n_ctx, one KV buffer shared by the slots"
    elif per_slot and slots:
        facts.kv_capacity = per_slot * slots
        facts.kv_source = "llama.cpp /props n_ctx × total_slots" + (
            "" if unified is False else "; assumes a KV buffer per slot (-np N): give --launch-command to tell")


async def busy_requests(endpoints: MetricsEndpoints) -> float | None:
    """Requests running or waiting on the server right now (on all its endpoints), or None if it does not say."""
    return metrics.busy_requests(await endpoints.samples())
