"""The metadata a user may set by hand, and its flag table, shared by `runner measure` and `sitegen import`.

Both commands take the same flags for the same bundle fields, so the table lives in the
contract: a field added here is offered by both.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import msgspec

from runner.bundle.error_lines import validation_parts
from runner.bundle.ids import not_a_run_id
from runner.bundle.schema import Bundle


class Metadata(msgspec.Struct, kw_only=True):
    """Overrides for every metadata field the run page shows; None = detect or leave empty."""

    id: str | None = None
    model: str | None = None
    submitter: str | None = None
    origin: str | None = None
    hardware_type: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    vram_per_gpu_gb: float | None = None
    os: str | None = None
    engine_name: str | None = None
    engine_version: str | None = None
    quantization: str | None = None
    backend: str | None = None
    repository: str | None = None
    build: str | None = None
    commit: str | None = None
    served_model: str | None = None
    revision: str | None = None
    nodes: int | None = None
    prefill_gpus: int | None = None
    decode_gpus: int | None = None


class MetadataFlag(NamedTuple):
    """One command-line flag that fills a Metadata field: flag, field name, type, help."""

    flag: str
    field: str
    kind: type
    help: str


# The flags of every Metadata field but the id, shared by `runner measure` and `sitegen import`.
METADATA_FLAGS = (
    MetadataFlag("--model-name", "model", str, "Model display name on the page."),
    MetadataFlag("--submitter", "submitter", str, "Who measured, e.g. @handle."),
    MetadataFlag("--origin", "origin", str, "Origin label (default: runner)."),
    MetadataFlag("--hardware-type", "hardware_type", str, "Hardware type, e.g. 'Discrete GPU'."),
    MetadataFlag("--gpu", "gpu", str, "GPU name, e.g. 'H200 NVL'."),
    MetadataFlag("--gpu-count", "gpu_count", int, "Number of GPUs."),
    MetadataFlag("--vram-per-gpu-gb", "vram_per_gpu_gb", float, "VRAM per GPU in GB (as sold, e.g. 141)."),
    MetadataFlag("--os", "os", str, "Operating system, e.g. linux."),
    MetadataFlag("--engine-name", "engine_name", str, "Engine name, e.g. vllm."),
    MetadataFlag("--engine-version", "engine_version", str, "Engine version."),
    MetadataFlag("--quantization", "quantization", str, "Quantization, e.g. FP8."),
    MetadataFlag("--backend", "backend", str, "Backend, e.g. cuda."),
    MetadataFlag("--repository", "repository", str, "Engine repository."),
    MetadataFlag("--build", "build", str, "Engine build."),
    MetadataFlag("--commit", "commit", str, "Engine commit."),
    MetadataFlag("--served-model", "served_model", str, "Served model name to record."),
    MetadataFlag("--nodes", "nodes", int, "Nodes the server spans (multi-node serving)."),
    MetadataFlag("--prefill-gpus", "prefill_gpus", int, "GPUs of the prefill side, for disaggregated serving."),
    MetadataFlag("--decode-gpus", "decode_gpus", int, "GPUs of the decode side, for disaggregated serving "
                                                       "(tok/s per GPU divides output tok/s by these)."),
    MetadataFlag("--revision", "revision", str, "Model revision."),
)


class InvalidOverride(ValueError):
    """An override a bundle could not hold; str() is one line naming the flag."""


# Where each override lands in the bundle, so a value the bundle cannot hold is named by its flag.
_SECTIONS = {"hardware_type": ("hardware", "type"), "gpu": ("hardware", "gpu"), "gpu_count": ("hardware", "gpu_count"),
             "vram_per_gpu_gb": ("hardware", "vram_per_gpu_gb"), "os": ("hardware", "os"),
             "engine_name": ("engine", "name"), "engine_version": ("engine", "version"),
             "quantization": ("engine", "quantization"), "backend": ("engine", "backend"),
             "repository": ("engine", "repository"), "build": ("engine", "build"), "commit": ("engine", "commit"),
             "served_model": ("run", "served_model"), "revision": ("run", "revision"),
             "nodes": ("topology", "nodes"), "prefill_gpus": ("topology", "prefill_gpus"),
             "decode_gpus": ("topology", "decode_gpus")}
_FLAG_AT = {"$." + ".".join(_SECTIONS.get(flag.field, (flag.field,))): flag.flag for flag in METADATA_FLAGS} | {"$.id": "--id"}


def check_overrides(meta: Metadata) -> None:
    """Refuse overrides a bundle could not hold (`--id ../x`, `--gpu-count 0`, a NaN), before anything is
    measured or imported; raises InvalidOverride naming the flag."""
    document: dict = {"id": "run", "model": "model", "engine": {"name": "engine"}, "hardware": {}, "run": {},
                      "topology": {}}
    for field, value in msgspec.structs.asdict(meta).items():
        if value is None:
            continue
        place = _SECTIONS.get(field, (field,))
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidOverride(f"{_FLAG_AT['$.' + '.'.join(place)]}: not a finite number: {value!r}")
        (document[place[0]] if len(place) == 2 else document)[place[-1]] = value
    if meta.vram_per_gpu_gb and meta.gpu_count and not math.isfinite(meta.vram_per_gpu_gb * meta.gpu_count):
        raise InvalidOverride(f"--vram-per-gpu-gb: {meta.vram_per_gpu_gb:g} GB × {meta.gpu_count} GPUs is too large a total")
    try:
        msgspec.convert(document, Bundle)
    except msgspec.ValidationError as exc:
        raise schema_error(exc, document["id"]) from None


def schema_error(exc: msgspec.ValidationError, bad_id: str) -> InvalidOverride:
    """A schema error as one line naming the flag that set the field."""
    where, message = validation_parts(exc)
    if where == "$.id":
        message = not_a_run_id(bad_id)
    return InvalidOverride(f"{_FLAG_AT.get(where, where)}: {message}")
