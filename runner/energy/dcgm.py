"""The energy meter of a server's GPUs through NVIDIA's DCGM exporter (`--gpu-metrics-url`).

dcgm-exporter's default counters (etc/default-counters.csv) serve each GPU's
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, a counter of millijoules since boot, and
DCGM_FI_DEV_POWER_USAGE, a gauge in watts, labelled with the GPU's number (`gpu`) and `UUID`.
The exporter serves what it last collected, every collect interval (`dcgm-exporter -c`,
milliseconds, 30000 by default): the meter takes a counter that has not moved for a stale
reading, so an exporter run with its default interval gives invalid readings; run it with
`-c 1000` or less. One exporter runs per node, so several URLs (one per node) are read together.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

from runner.bundle.redact import redact
from runner.client import Client
from runner.energy.meter import EnergyMeter, EnergyUnavailable, GpuReading, ReadFailed
from runner.errors import RequestFailed
from runner.metrics import Sample, parse_prometheus

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
POWER = "DCGM_FI_DEV_POWER_USAGE"
# The longest a scrape may take: under the meter's READ_TIMEOUT_S, so that the reason of a slow
# exporter names it.
SCRAPE_TIMEOUT_S = 1.5


def _by_uuid(samples: list[Sample], name: str) -> dict[str, tuple[str, float]]:
    """Each GPU's number and value of one metric, by UUID. A GPU's series may repeat (one per MIG
    instance, each with the whole GPU's value): the first is taken. A value that is not a finite,
    non-negative number is no reading."""
    found: dict[str, tuple[str, float]] = {}
    for sample in samples:
        uuid = sample.labels.get("UUID")
        if sample.name == name and uuid and uuid not in found and math.isfinite(sample.value) and sample.value >= 0:
            found[uuid] = (sample.labels.get("gpu", uuid), sample.value)
    return found


async def _read_one(client: Client, url: str) -> dict[str, GpuReading]:
    """Every GPU on one exporter's page; ReadFailed when it does not answer or lacks either metric."""
    shown = redact(url)
    try:
        response = await client.get_url(url, timeout=SCRAPE_TIMEOUT_S)
    except RequestFailed as exc:
        raise ReadFailed(redact(str(exc))) from None
    if response.status_code != 200:
        raise ReadFailed(f"HTTP {response.status_code} from {shown}")
    samples = parse_prometheus(response.text, (ENERGY, POWER))
    energy, power = _by_uuid(samples, ENERGY), _by_uuid(samples, POWER)
    for name, values in ((ENERGY, energy), (POWER, power)):
        if not values:
            raise ReadFailed(f"{shown} serves no {name} with a GPU UUID")
    return {uuid: GpuReading(index=index, energy_mj=energy_mj, power_w=power[uuid][1])
            for uuid, (index, energy_mj) in energy.items() if uuid in power}


async def _read_all(client: Client, urls: Sequence[str]) -> dict[str, GpuReading]:
    """Every exporter at once, their GPUs together; any one failing fails the read."""
    found: dict[str, GpuReading] = {}
    for gpus in await asyncio.gather(*(_read_one(client, url) for url in urls)):
        found.update(gpus)
    return found


async def dcgm_meter(client: Client, urls: Sequence[str]) -> EnergyMeter:
    """A meter of the GPUs the DCGM exporters at `urls` serve, read through `client` (whose key goes only
    to the server's own origin); EnergyUnavailable says why there is none, after one trial read."""
    async def read() -> dict[str, GpuReading]:
        return await _read_all(client, urls)

    try:
        found = await read()
    except ReadFailed as exc:
        raise EnergyUnavailable(f"cannot read the GPUs' energy from the DCGM exporter: {exc}") from None
    if not found:
        raise EnergyUnavailable(f"the DCGM exporter serves no GPU with both {ENERGY} and {POWER}")
    return EnergyMeter(" ".join(redact(url) for url in urls), read)
