"""A simulated OpenAI-compatible (vLLM-shaped) inference server with predictable timings.

Used by `runner simulate` for demos and by tests of the measuring runner; see
runner.simulator.config for the timing model and runner.simulator.faults for
the faults it can inject.
"""

from runner.simulator.config import SimConfig
from runner.simulator.engine import EngineStats
from runner.simulator.faults import Faults
from runner.simulator.server import (
    PortUnavailable,
    SimServer,
    running_simulator,
    serve,
    start_simulator,
)

__all__ = ["EngineStats", "Faults", "PortUnavailable", "SimConfig", "SimServer", "running_simulator",
           "serve", "start_simulator"]
