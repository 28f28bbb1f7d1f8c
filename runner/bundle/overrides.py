"""The metadata a user may set by hand, and its flag table, shared by `runner measure` and `sitegen import`.

Both commands take the same flags for the same bundle fields, so the table lives in the
contract: a field added here is offered by both.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec


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
    MetadataFlag("--revision", "revision", str, "Model revision."),
)
