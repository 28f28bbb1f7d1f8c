"""The bundle's metadata: server facts, hardware and launch command, with user overrides on top."""

from __future__ import annotations

import datetime as dt
import re
from importlib import metadata as dist_metadata
from urllib.parse import urlsplit

import msgspec

from runner.bundle.ids import run_id
from runner.bundle.overrides import schema_error
from runner.bundle.redact import redact_fields
from runner.bundle.schema import (
    Bundle,
    Engine,
    Hardware,
    RunInfo,
    Topology,
    decode_bundle,
    encode_bundle,
)
from runner.errors import OptionError
from runner.hardware import GpuInfo, client_machine, local_os
from runner.launch import parse_launch
from runner.options import Options
from runner.server_facts import ServerFacts

SIMULATOR_ENGINE = "speed-matrix simulator"
SIMULATED_ORIGIN = "runner (simulated)"

REPOSITORIES = {
    "vllm": "github.com/vllm-project/vllm",
    "sglang": "github.com/sgl-project/sglang",
    "llama.cpp": "github.com/ggml-org/llama.cpp",
    "tgi": "github.com/huggingface/text-generation-inference",
    "tensorrt-llm": "github.com/NVIDIA/TensorRT-LLM",
}
_COMMIT = re.compile(r"(?:\+g|-g?|\.g)([0-9a-f]{7,40})\b")


def runner_version() -> str:
    """This tool's version, for the bundle's benchmark_tool field."""
    try:
        return dist_metadata.version("speed-matrix")
    except dist_metadata.PackageNotFoundError:
        return "dev"


def check_bundle_fields(bundle: Bundle) -> None:
    """Refuse a bundle the schema rejects (sitegen would not publish it), naming the flag of the bad field."""
    try:
        decode_bundle(encode_bundle(bundle))
    except msgspec.ValidationError as exc:
        raise OptionError(str(schema_error(exc, bundle.id))) from None


CHUNK_COUNTING_NOTE = (
    "one per streamed chunk, settled by the final usage of requests that finish; the server sends "
    "no running count, so a chunk carrying several tokens (speculative decoding) counts as one")


def is_local(base_url: str) -> bool:
    """True when the server runs on this machine, so local hardware describes it."""
    return (urlsplit(base_url).hostname or "") in ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def build_header(options: Options, facts: ServerFacts, gpus: GpuInfo | None, secrets: list[str],
                 started: dt.datetime, simulated: bool = False) -> Bundle:
    """The bundle's metadata (no measurements yet) with every override applied and `secrets` redacted."""
    meta = options.metadata
    launch = parse_launch(options.launch_command)
    simulated = simulated or facts.simulated
    local = is_local(options.base_url)
    engine_name = meta.engine_name or (SIMULATOR_ENGINE if simulated else facts.engine)
    commit = meta.commit or _commit(facts.version, facts.build)
    hardware = Hardware(
        type=meta.hardware_type or ("Discrete GPU" if gpus else ("Simulated" if simulated else None)),
        gpu=meta.gpu or (gpus.name if gpus else None),
        gpu_count=meta.gpu_count if meta.gpu_count is not None else (launch.gpu_count or (gpus.count if gpus else None)),
        vram_per_gpu_gb=meta.vram_per_gpu_gb if meta.vram_per_gpu_gb is not None else (gpus.vram_per_gpu_gb if gpus else None),
        os=meta.os or (local_os() if local else None),
        client=client_machine(),
    )
    if gpus and gpus.driver:
        hardware.gpu_driver = gpus.driver
    if gpus and gpus.cuda_version:
        hardware.cuda_version = gpus.cuda_version
    engine = Engine(
        name=engine_name,
        version=meta.engine_version or facts.version,
        quantization=meta.quantization or launch.quantization,
        backend=meta.backend or ("cuda" if gpus and not simulated else None),
        repository=meta.repository or REPOSITORIES.get(facts.engine if not simulated else ""),
        build=meta.build or (facts.build if facts.build != facts.version else None),
        commit=commit,
    )
    topology = Topology(nodes=meta.nodes or launch.nodes, tensor_parallel=launch.tensor_parallel,
                        pipeline_parallel=launch.pipeline_parallel, data_parallel=launch.data_parallel,
                        expert_parallel=launch.expert_parallel_size, prefill_gpus=meta.prefill_gpus,
                        decode_gpus=meta.decode_gpus)
    if launch.speculative_method:
        engine.speculative_method = launch.speculative_method
    if launch.speculative_tokens:
        engine.speculative_tokens = launch.speculative_tokens
    run = RunInfo(
        served_model=meta.served_model or facts.model,
        revision=meta.revision or launch.revision,
        benchmark_tool=f"speed-matrix runner v{runner_version()}",
        decode_test="Fixed duration",
        prefill_mode="Measured during decode warm-up",
        seconds_per_measurement=options.duration,
        max_output_tokens=options.max_output,
        api=facts.api,
    )
    model = meta.model or display_name(facts.model)
    return redact_fields(Bundle(
        id=meta.id or run_id(model, hardware.gpu, engine_name, started.strftime("%Y-%m-%d-%H%M")),
        model=model,
        measured_at=started,
        submitter=meta.submitter,
        origin=meta.origin or (SIMULATED_ORIGIN if simulated else "runner"),
        hardware=hardware,
        engine=engine,
        run=run,
        launch_command=options.launch_command,
        notes=f"Token counts: {CHUNK_COUNTING_NOTE}." if facts.token_counts == "chunks" else None,
        topology=topology if topology != Topology() else msgspec.UNSET,
    ), secrets)


def display_name(served_model: str) -> str:
    """A model's display name: the last path component of its served name."""
    return served_model.rstrip("/").rsplit("/", 1)[-1] or served_model


def _commit(version: str | None, build: str | None) -> str | None:
    """A commit hash embedded in a version or build string ("0.9+g1ea7c63f4", "b5000-abc1234")."""
    for text in (version, build):
        match = _COMMIT.search(text or "")
        if match:
            return match.group(1)
    return None
