"""`runner simulate`: measure the built-in simulator, with the bundle saying it was simulated."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import msgspec

from runner.measure import measure
from runner.options import OptionError, Options
from runner.progress import RunEvents
from runner.simulator import SimConfig, running_simulator
from runner.simulator.config import decode_config

# msgspec's "<what> - at `$.path`", its two kinds of <what> we reword, and its type names in words.
_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<where>[^`]*)`)?$", re.DOTALL)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$")
_EXPECTED = re.compile(r"^Expected `(?P<kinds>[^`]*)`(?P<limit>.*?)(?:, got `[^`]*`)?$")
_KINDS = {"float": "a number", "int": "a whole number", "str": "a string", "bool": "true or false",
          "object": "an object", "array": "a list", "null": "null"}


def load_sim_config(path: Path | None) -> SimConfig:
    """Simulator settings from a JSON file, or the defaults; raises OptionError naming file and field."""
    if path is None:
        return SimConfig()
    if not path.is_file():  # a FIFO would block the read forever
        raise OptionError(f"{path}: cannot read: not a regular file")
    try:
        config = decode_config(path.read_bytes())
    except OSError as exc:
        raise OptionError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except msgspec.ValidationError as exc:  # before DecodeError, its base class
        raise OptionError(f"{path}: {_validation_line(str(exc))}") from None
    except msgspec.DecodeError as exc:
        raise OptionError(f"{path}: invalid JSON: {exc}") from None
    if config.token_log and not Path(config.token_log).parent.is_dir():
        raise OptionError(f"{path}: $.token_log: no folder {str(Path(config.token_log).parent)!r} to write the log in")
    return config


def _validation_line(message: str) -> str:
    """msgspec's validation message as `$.field: what is wrong`, e.g. `$.seed: expected a whole number`."""
    match = _AT.match(message)
    assert match is not None  # the pattern matches any text
    what, where = match["what"], match["where"] or "$"
    if unknown := _UNKNOWN.match(what):
        return f"{where}.{unknown['name']}: unknown field"
    if expected := _EXPECTED.match(what):
        kinds = " or ".join(_KINDS.get(k, k) for k in expected["kinds"].split(" | "))
        return f"{where}: expected {kinds}{expected['limit']}"
    return what if where == "$" else f"{where}: {what}"


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
