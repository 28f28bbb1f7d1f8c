"""The GPUs the server runs on, via NVML (nvidia-ml-py) when it is installed."""

from __future__ import annotations

import sys

import msgspec


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
    return GpuInfo(name=name.removeprefix("NVIDIA ").strip(), count=count, vram_per_gpu_gb=round(memory / 2**30))


def local_os() -> str:
    """The operating system, as the seeds write it ("linux")."""
    return sys.platform
