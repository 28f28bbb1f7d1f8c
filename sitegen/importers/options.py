"""Options of `sitegen import` that fill what a source file lacks."""

from __future__ import annotations

import msgspec


class ImportOptions(msgspec.Struct, kw_only=True):
    """Overrides given on the command line; None means: take it from the file."""

    id: str | None = None
    model: str | None = None
    submitter: str | None = None
    origin: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    vram_per_gpu_gb: float | None = None
    hardware_type: str | None = None
    os: str | None = None
    quantization: str | None = None
    engine_version: str | None = None
    launch_command: str | None = None
