"""The result bundle: the public contract between `runner` and `sitegen`.

This module imports only msgspec (and the standard library) so that sitegen can
load bundles without pulling in the runner's HTTP stack. Field names are the
contract of docs/: add fields freely, rename none without bumping SCHEMA.

Fields added after the first release default to msgspec.UNSET, so they are left
out of the JSON when absent: a bundle written before them re-encodes byte for
byte, and `None` keeps meaning "the field exists but has no value".
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

SCHEMA = 1

Status = Literal["Valid", "Over capacity", "Looped", "Requests queued", "Distorted", "Failed"]
STATUSES: tuple[str, ...] = ("Valid", "Over capacity", "Looped", "Requests queued", "Distorted", "Failed")

# A run id is a slug: it names a folder of the site, so it must never be a path.
RUN_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,118}[a-z0-9])?$"
RunId = Annotated[
    str,
    msgspec.Meta(
        pattern=RUN_ID_PATTERN,
        description="Slug of lowercase ASCII letters, digits and hyphens; unique in a site.",
    ),
]
# The most tokens any count of a bundle may hold: a bound on what a server or a file may claim.
MAX_TOKENS = 1 << 40
Tokens = Annotated[int, msgspec.Meta(ge=1, le=MAX_TOKENS)]
Count = Annotated[int, msgspec.Meta(ge=0)]
Rate = Annotated[float, msgspec.Meta(ge=0)]
Text = Annotated[str, msgspec.Meta(max_length=100_000)]


class ClientMachine(msgspec.Struct, kw_only=True):
    """The machine the runner (the client) ran on: its load can distort what it measures."""

    cpu: Text | None = None
    cores: Annotated[int, msgspec.Meta(ge=1)] | None = None
    memory_gb: Rate | None = None
    # The runner's nice value while it measured (runner.priority raises it where permitted).
    nice: Annotated[int, msgspec.Meta(ge=-20, le=19)] | UnsetType = UNSET
    # Its session's (autogroup's) nice value, which orders it against servers in other sessions first.
    session_nice: Annotated[int, msgspec.Meta(ge=-20, le=19)] | UnsetType = UNSET


class Hardware(msgspec.Struct, kw_only=True):
    """What the server ran on, and the client machine that measured it."""

    type: Text | None = None
    gpu: Text | None = None
    gpu_count: Annotated[int, msgspec.Meta(ge=1)] | None = None
    vram_per_gpu_gb: Rate | None = None
    os: Text | None = None
    gpu_driver: Text | UnsetType = UNSET
    cuda_version: Text | UnsetType = UNSET
    client: ClientMachine | UnsetType = UNSET


class Engine(msgspec.Struct, kw_only=True):
    """The inference engine and how it was built."""

    name: Text
    version: Text | None = None
    quantization: Text | None = None
    backend: Text | None = None
    repository: Text | None = None
    build: Text | None = None
    commit: Text | None = None
    # Speculative decoding as launched: the method ("eagle3", "draft_model", "ngram"…) and the
    # tokens drafted per step.
    speculative_method: Text | UnsetType = UNSET
    speculative_tokens: Annotated[int, msgspec.Meta(ge=1, le=1024)] | UnsetType = UNSET


class RunInfo(msgspec.Struct, kw_only=True):
    """How the measurement was taken."""

    served_model: Text | None = None
    revision: Text | None = None
    benchmark_tool: Text | None = None
    decode_test: Text | None = None
    prefill_mode: Text | None = None
    seconds_per_measurement: Rate | None = None
    max_output_tokens: Tokens | None = None
    # The API the requests went through: "completions" or "chat" (the chat template applied).
    api: Literal["completions", "chat"] | UnsetType = UNSET


class PrefillPoint(msgspec.Struct, kw_only=True):
    """One cold request at one context length: prompt tok/s = prompt tokens / TTFT."""

    context_tokens: Tokens
    status: Status
    prompt_tok_s: Rate | None = None
    ttft_ms: Rate | None = None
    prompt_tokens: Count | None = None
    error: Text | None = None


class EndpointCheck(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One /metrics endpoint of a server measured through several (`--metrics-url`): how its scrapes went."""

    url: Text
    scrapes: Count
    failed: Count = 0
    scrape_max_ms: Rate | None = None


class ServerCheck(msgspec.Struct, kw_only=True):
    """The server's own accounting of one decode window: /metrics read right before and after it.

    Latencies are the change of the server's histograms over the window: means exact (sum over
    count), medians estimated inside their bucket. The gauges' maxima take every scrape of the
    window, slow ones too (they still read some moment inside it). vLLM observes inter-token
    latency once per step, however many tokens the step gave, so `itl_per_token_ms` spreads the
    summed latency over the tokens after each request's first (SGLang counts it per token
    already). Gauges come from the scrapes taken during the window that answered promptly;
    `stale_scrapes` counts those that did not and were set aside. Two figures come from the
    histograms alone, so no stale scrape or starved client moves them: `active_mean`, the
    requests the server had generating on average (its summed inter-token latency over the
    window's length), and `first_token_waited_share`, the share of the window's first tokens
    that came 0.1 s or more after their request arrived.
    """

    metrics: Text
    generated_tokens: Count | None = None
    requests: Count | None = None
    ttft_mean_ms: Rate | None = None
    ttft_median_ms: Rate | None = None
    itl_mean_ms: Rate | None = None
    itl_median_ms: Rate | None = None
    itl_per_token_ms: Rate | None = None
    queue_mean_ms: Rate | None = None
    queued_share: Rate | None = None
    waiting_max: Rate | None = None
    waiting_share: Rate | None = None
    waiting_seen: Count = 0
    running_mean: Rate | None = None
    running_max: Rate | None = None
    scrapes: Count = 0
    stale_scrapes: Count = 0
    scrape_max_ms: Rate | None = None
    active_mean: Rate | None | UnsetType = UNSET
    first_token_waited_share: Rate | None | UnsetType = UNSET
    endpoints: list[EndpointCheck] | UnsetType = UNSET


class SpeculativeCheck(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Speculative decoding over one decode window, as the server accounts for it.

    From vLLM's counters (the change over the window): `drafts` (draft runs), `draft_tokens`
    (tokens proposed) and `accepted_tokens`; `acceptance_rate` = accepted ÷ draft tokens,
    `mean_acceptance_length` = 1 + accepted ÷ drafts (tokens one target pass yields, its own
    token included), and `per_position[k]` = accepted at draft position k ÷ drafts. Where an
    engine keeps only running means (SGLang's gauges), the two rates are their mean over the
    window's scrapes and the counts stay empty. `source` says which.
    """

    source: Text
    drafts: Count | None = None
    draft_tokens: Count | None = None
    accepted_tokens: Count | None = None
    acceptance_rate: Rate | None = None
    mean_acceptance_length: Rate | None = None
    per_position: list[Rate] | None = None


class EnergyCheck(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The GPUs' energy over one decode window: each GPU's energy counter read at the window's start
    and end, and its power sampled in between to judge the reading.

    `source` is "nvml" (the runner's own machine) or the DCGM exporter's URL. `joules` is summed
    over `gpus`; `joules_per_output_token` divides it by the window's output tokens and
    `joules_per_token` by its output and prompt tokens together; `mean_watts_per_gpu` is joules ÷
    seconds ÷ GPUs. `valid` is False, with `invalid_reason`, when the reading cannot be trusted:
    a failed or slow read at either end, a GPU missing at either end, a counter that went
    backwards (a reset) or did not advance, a gap over 3 s without a fresh reading, or a window
    under 2 s (a counter moves in steps of about 100 ms). An invalid reading keeps no joules.
    """

    source: Text
    valid: bool
    invalid_reason: Text | None = None
    gpus: Count = 0
    seconds: Rate | None = None
    joules: Rate | None = None
    joules_per_output_token: Rate | None = None
    joules_per_token: Rate | None = None
    mean_watts_per_gpu: Rate | None = None
    power_samples: Count = 0
    max_sample_gap_s: Rate | None = None


class ClientCheck(msgspec.Struct, kw_only=True):
    """How well the client kept up during one decode window (see runner.selfcheck)."""

    attempts: Annotated[int, msgspec.Meta(ge=1)] = 1
    loop_lag_p99_ms: Rate | None = None
    loop_lag_max_ms: Rate | None = None
    cpu_share: Rate | None = None
    burst_share: Rate | None = None
    overrun_ms: Rate | None = None


class DecodeCell(msgspec.Struct, kw_only=True):
    """One sustained-decode measurement: C tokens of context, N requests at once.

    The medians are `ttft_ms` and `tbt_ms`; the tail percentiles beside them are
    recorded by the runner and carried by importers whose source has them. The runner also
    records when the window started (UTC), the server's own account of it (`server`), how
    well the client kept up (`client`), and for a Distorted cell why (`distortion`).
    A cell measured several times (`runner measure --repeats`) keeps every repeat, in the order
    measured, in `repeats`; its own figures are their medians, and `total_tok_s_spread_pct` is the
    spread of their total tok/s: (highest − lowest) ÷ median, in percent.
    """

    context_tokens: Tokens
    concurrency: Annotated[int, msgspec.Meta(ge=1)]
    status: Status
    total_tok_s: Rate | None = None
    per_request_tok_s: Rate | None = None
    ttft_ms: Rate | None = None
    tbt_ms: Rate | None = None
    avg_active: Rate | None = None
    completed: Count | None = None
    output_tokens: Count | None = None
    measured_s: Rate | None = None
    prompt_tokens: Count | None = None
    error: Text | None = None
    ttft_p90_ms: Rate | UnsetType = UNSET
    ttft_p99_ms: Rate | UnsetType = UNSET
    tbt_p90_ms: Rate | UnsetType = UNSET
    tbt_p99_ms: Rate | UnsetType = UNSET
    repeats: list[DecodeCell] | UnsetType = UNSET
    total_tok_s_spread_pct: Rate | UnsetType = UNSET
    window_started_at: Annotated[dt.datetime, msgspec.Meta(tz=True)] | UnsetType = UNSET
    server: ServerCheck | UnsetType = UNSET
    client: ClientCheck | UnsetType = UNSET
    distortion: Text | UnsetType = UNSET
    speculative: SpeculativeCheck | UnsetType = UNSET
    energy: EnergyCheck | UnsetType = UNSET


class ServerLaunch(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How the runner started and stopped the server it measured (`runner measure --serve`, `runner sweep`),
    and the batch job it ran in, where a scheduler ran it."""

    ready_s: Rate | None = None
    ended: Text | None = None
    log: Text | None = None
    scheduler: Text | None = None
    job_id: Text | None = None
    node: Text | None = None


GpuCount = Annotated[int, msgspec.Meta(ge=1, le=1 << 20)]


class Topology(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How the deployment spreads over GPUs: nodes, parallel sizes, and for disaggregated serving the
    GPUs of the prefill and the decode side (tok/s per GPU divides output tok/s by the decode GPUs)."""

    nodes: GpuCount | None = None
    tensor_parallel: GpuCount | None = None
    pipeline_parallel: GpuCount | None = None
    data_parallel: GpuCount | None = None
    expert_parallel: GpuCount | None = None
    prefill_gpus: GpuCount | None = None
    decode_gpus: GpuCount | None = None


class Bundle(msgspec.Struct, kw_only=True):
    """One run: hardware, engine, launch command and every measurement."""

    schema: Literal[1] = SCHEMA
    id: RunId
    model: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)]
    measured_at: Annotated[dt.datetime, msgspec.Meta(tz=True)] | None = None
    submitter: Text | None = None
    origin: Text | None = None
    hardware: Hardware = msgspec.field(default_factory=Hardware)
    engine: Engine
    run: RunInfo = msgspec.field(default_factory=RunInfo)
    launch_command: Text | None = None
    notes: Text | None = None
    prefill: list[PrefillPoint] = msgspec.field(default_factory=list)
    decode: list[DecodeCell] = msgspec.field(default_factory=list)
    launch: ServerLaunch | UnsetType = UNSET
    topology: Topology | UnsetType = UNSET


_decoder = msgspec.json.Decoder(Bundle)
_encoder = msgspec.json.Encoder(order="deterministic")


def decode_bundle(data: bytes | str) -> Bundle:
    """Decode and validate bundle JSON; raises msgspec.ValidationError/DecodeError."""
    return _decoder.decode(data)


def encode_bundle(bundle: Bundle) -> bytes:
    """Encode a bundle as pretty, deterministic JSON ending in a newline."""
    return msgspec.json.format(encode_bundle_compact(bundle), indent=2) + b"\n"


def encode_bundle_compact(bundle: Bundle) -> bytes:
    """The same JSON without the indentation, a third smaller: the site's download of a run."""
    return _encoder.encode(bundle)


def schema_problem(value: msgspec.Struct) -> tuple[str, str] | None:
    """Why `value` would not load back as its own type, as (`$.field`, what is wrong); None if it would.

    A Struct is not checked when made, and JSON would write a NaN or an infinity as null, so
    every record is checked this way before it is written: its constraints and finite numbers.
    """
    plain = msgspec.to_builtins(value)
    where = _non_finite(plain, "$")
    if where is not None:
        return where, "not a finite number"
    try:
        msgspec.convert(plain, type(value))
    except msgspec.ValidationError as exc:
        text = str(exc)
        what, _, at = text.partition(" - at `")
        return (at.rstrip("`") or "$"), what
    return None


def _non_finite(value: Any, where: str) -> str | None:
    """The `$.path` of the first NaN or infinity in plain data, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    if isinstance(value, dict):
        items = ((f"{where}.{key}", item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{where}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    return next((found for path, item in items if (found := _non_finite(item, path)) is not None), None)


def bundle_json_schema() -> dict:
    """The JSON Schema of the bundle, generated from the Structs."""
    return msgspec.json.schema(Bundle)
