"""`runner simulate`: measure the built-in simulator, with the bundle saying it was simulated."""

from __future__ import annotations

import shlex
from pathlib import Path

import msgspec

from runner.bundle.error_lines import decode_parts, located
from runner.bundle.files import Unreadable, read_input
from runner.errors import OptionError
from runner.measure import measure
from runner.options import Options
from runner.progress import RunEvents
from runner.simulator import SimConfig, running_simulator
from runner.simulator.config import decode_config


def load_sim_config(path: Path | None) -> SimConfig:
    """Simulator settings from a JSON file, or the defaults; raises OptionError naming file and field."""
    if path is None:
        return SimConfig()
    try:
        data = read_input(path)
    except Unreadable as exc:
        raise OptionError(located(path, None, str(exc))) from None
    try:
        config = decode_config(data)
    except msgspec.DecodeError as exc:  # a ValidationError too
        raise OptionError(located(path, *decode_parts(data, exc))) from None
    if config.token_log and not Path(config.token_log).parent.is_dir():
        raise OptionError(f"{path}:$.token_log: no folder {str(Path(config.token_log).parent)!r} to write the log in")
    return config


def serve_command(sim_config: Path | None) -> str:
    """The command that starts this simulator on its own: the run's "launch command"."""
    return "runner simulate --serve-only" + (f" --sim-config {shlex.quote(str(sim_config))}" if sim_config else "")


async def simulate_run(options: Options, config: SimConfig, port: int = 0, sim_config: Path | None = None,
                       progress: RunEvents | None = None) -> Path:
    """Start the simulator on `port` (0 = a free one), measure it with `progress` showing, stop it; the bundle path.

    Unless told otherwise, the bundle's launch command is the one that serves the same simulator.
    """
    with running_simulator(config, port=port) as server:
        options = msgspec.structs.replace(options, base_url=server.base_url,
                                          launch_command=options.launch_command or serve_command(sim_config))
        return await measure(options, simulated=True, progress=progress)
