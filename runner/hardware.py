"""The machine the runner measures from, and the GPUs the server runs on (NVML, when installed)."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import msgspec

from runner.bundle.schema import ClientMachine
from runner.priority import current_nice, session_nice

T = TypeVar("T")

# Capacities as vendors sell them (and as the published pages print them). NVML reports what
# the driver can address, a little under: an H200 sold as 141 GB reports 143,771 MiB, 140.4 GiB.
MARKETED_GB = (8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 128, 141, 180, 186, 192, 256, 288)
MARKETED_TOLERANCE = 0.02


class GpuInfo(msgspec.Struct, kw_only=True):
    """What NVML says about the local GPUs."""

    name: str
    count: int
    vram_per_gpu_gb: float
    driver: str | None = None
    cuda_version: str | None = None


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
            driver = _optional(pynvml.nvmlSystemGetDriverVersion)
            cuda = _optional(pynvml.nvmlSystemGetCudaDriverVersion)
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None
    name = name.decode() if isinstance(name, bytes) else name
    return GpuInfo(name=name.removeprefix("NVIDIA ").strip(), count=count, vram_per_gpu_gb=marketed_gb(memory),
                   driver=driver.decode() if isinstance(driver, bytes) else driver,
                   cuda_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) and cuda > 0 else None)


def _optional(call: Callable[[], T]) -> T | None:
    """`call()` (an NVML getter), or None where this driver or NVML binding does not offer it."""
    try:
        return call()
    except Exception:  # NVMLError_NotSupported and kin, or a binding without the function
        return None


def marketed_gb(total_bytes: int) -> float:
    """The memory a GPU is sold with, from NVML's total: the marketed size within 2 %, else whole GiB."""
    gib = total_bytes / 2**30
    nearest = min(MARKETED_GB, key=lambda size: abs(size - gib))
    return nearest if abs(nearest - gib) <= MARKETED_TOLERANCE * nearest else round(gib)


def local_os() -> str:
    """The operating system, as the seeds write it ("linux")."""
    return sys.platform


def client_machine() -> ClientMachine:
    """CPU model, usable cores and memory of this machine, and the runner's priority on it: where the client's own load is judged."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory = None
    session = session_nice()
    return ClientMachine(cpu=cpu or platform.processor() or None, cores=cores or None,
                         memory_gb=round(memory, 1) if memory else None, nice=current_nice(),
                         session_nice=msgspec.UNSET if session is None else session)
