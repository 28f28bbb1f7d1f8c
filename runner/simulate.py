"""`runner simulate`: measure the built-in simulator, with the bundle saying it was simulated."""

from __future__ import annotations

from pathlib import Path

import msgspec

from runner.measure import measure
from runner.options import Options
from runner.simulator import SimConfig, running_simulator, serve


def load_sim_config(path: Path | None) -> SimConfig:
    """Simulator settings from a JSON file, or the defaults."""
    return msgspec.json.decode(path.read_bytes(), type=SimConfig) if path else SimConfig()


def serve_simulator(config: SimConfig, port: int) -> None:
    """Serve the simulator on 127.0.0.1:`port` until interrupted."""
    try:
        serve(config, "127.0.0.1", port)
    except KeyboardInterrupt:
        pass


async def simulate_run(options: Options, config: SimConfig) -> Path:
    """Start the simulator in the background, measure it, stop it; the bundle path."""
    with running_simulator(config) as server:
        options = msgspec.structs.replace(options, base_url=server.base_url)
        return await measure(options, simulated=True)
