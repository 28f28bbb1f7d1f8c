"""The GPUs the server runs on, via NVML (nvidia-ml-py) when it is installed."""

from __future__ import annotations

import sys

import msgspec

# Capacities as vendors sell them (and as the published pages print them). NVML reports what
# the driver can address, a little under: an H200 sold as 141 GB reports 143,771 MiB, 140.4 GiB.
MARKETED_GB = (8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 128, 141, 180, 186, 192, 256, 288)
MARKETED_TOLERANCE = 0.02


class GpuInfo(msgspec.Struct, kw_only=True):
    """What NVML says about the local GPUs."""

    name: str
    count: int
    vram_per_gpu_gb: float


def detect_gpus() -> GpuInfo | None:
    """Name, count and memory of the local GPUs, or None without NVML or GPUs."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
            if count == 0:
                return None
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            name = pynvml.nvmlDeviceGetName(handle)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle).total
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None
    name = name.decode() if isinstance(name, bytes) else name
    return GpuInfo(name=name.removeprefix("NVIDIA ").strip(), count=count, vram_per_gpu_gb=marketed_gb(memory))


def marketed_gb(total_bytes: int) -> float:
    """The memory a GPU is sold with, from NVML's total: the marketed size within 2 %, else whole GiB."""
    gib = total_bytes / 2**30
    nearest = min(MARKETED_GB, key=lambda size: abs(size - gib))
    return nearest if abs(nearest - gib) <= MARKETED_TOLERANCE * nearest else round(gib)


def local_os() -> str:
    """The operating system, as the seeds write it ("linux")."""
    return sys.platform
