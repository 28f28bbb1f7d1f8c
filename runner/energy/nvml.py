"""The energy meter of this machine's GPUs, through NVML (nvidia-ml-py, the `gpu` extra).

NVML's nvmlDeviceGetTotalEnergyConsumption is a GPU's energy in millijoules since the driver
loaded (Volta and later), and nvmlDeviceGetPowerUsage its power in milliwatts. NVML calls block,
so each read runs on a thread of the meter's own: a call that hangs holds up that thread and
times the reads out, and never piles up threads. NVML sees every GPU of the machine, whatever
CUDA_VISIBLE_DEVICES says, so every one of them is read.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

from runner.energy.meter import EnergyMeter, EnergyUnavailable, GpuReading, ReadFailed

SOURCE = "nvml"


class _Gpus:
    """Every GPU NVML sees, read once per call, on the calling thread."""

    def __init__(self, nvml: ModuleType) -> None:
        """Find every GPU and check it has an energy counter; raises NVMLError or EnergyUnavailable."""
        self.nvml = nvml
        self.devices: list[tuple[str, str, Any]] = []  # number, UUID, handle
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            uuid = nvml.nvmlDeviceGetUUID(handle)
            uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            try:
                nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                nvml.nvmlDeviceGetPowerUsage(handle)
            except nvml.NVMLError as exc:
                raise EnergyUnavailable(f"GPU {index} ({uuid}) has no energy counter or power reading in NVML: {exc}") from None
            self.devices.append((str(index), uuid, handle))
        if not self.devices:
            raise EnergyUnavailable("NVML sees no GPU")

    def read(self) -> dict[str, GpuReading]:
        """Every GPU's counter and power; one that fails is left out (missing), all failing raises ReadFailed."""
        found: dict[str, GpuReading] = {}
        error = ""
        for index, uuid, handle in self.devices:
            try:
                energy_mj = self.nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                power_mw = self.nvml.nvmlDeviceGetPowerUsage(handle)
            except self.nvml.NVMLError as exc:
                error = f"GPU {index} ({uuid}): {exc}"
                continue
            found[uuid] = GpuReading(index=index, energy_mj=float(energy_mj), power_w=power_mw / 1000)
        if not found:
            raise ReadFailed(f"NVML answered no GPU: {error}")
        return found


def nvml_meter() -> EnergyMeter:
    """A meter of every GPU of this machine; EnergyUnavailable says why there is none (no nvidia-ml-py,
    no driver, no GPU, a GPU without an energy counter). NVML stays initialised while the process runs."""
    try:
        import pynvml
    except ImportError:
        raise EnergyUnavailable("nvidia-ml-py is not installed: pip install -e '.[gpu]'") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise EnergyUnavailable(f"NVML did not start: {exc}") from None
    try:
        gpus = _Gpus(pynvml)
    except pynvml.NVMLError as exc:
        pynvml.nvmlShutdown()
        raise EnergyUnavailable(f"NVML could not list the GPUs: {exc}") from None
    except EnergyUnavailable:
        pynvml.nvmlShutdown()
        raise
    thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nvml-energy")

    async def read() -> dict[str, GpuReading]:
        return await asyncio.get_running_loop().run_in_executor(thread, gpus.read)

    return EnergyMeter(SOURCE, read)
