"""A sweep file (TOML): many setups, each measured as `runner measure --serve` would measure it.

```toml
[defaults]                # any `runner measure` option by its long name, '-' written '_'
contexts = "8K,32K"
[[setup]]
id = "qwen3-8b-h200-tp1"  # the run id; required, unique in the file
serve = "vllm serve Qwen/Qwen3-8B --port {port}"
gpus = 1                  # optional; otherwise the serve command's parallel sizes (1 if none)
env = { VLLM_USE_V2_MODEL_RUNNER = "1" }
```

Each setup's options go through `runner measure`'s own command-line parser, so a value means in
the file exactly what it means on the command line, and is checked the same way. Any mistake
stops the sweep before anything starts, with one line naming the file, the setup and the key.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

import click
import msgspec

from runner.bundle.files import Unreadable, read_input
from runner.errors import OptionError
from runner.launch import parse_launch
from runner.options import Options

# Keys of a setup that are no `runner measure` option, and options a sweep decides itself.
SETUP_KEYS = ("id", "gpus", "env")
SWEEP_DECIDES = {"out": "the sweep writes <out-dir>/<id>.json", "resume": "the sweep resumes on its own",
                 "replace": "the sweep never overwrites a finished run"}
MAX_GPUS = 1024


class Setup(msgspec.Struct, kw_only=True):
    """One setup of a sweep: its run id, the GPUs it asks for, and the options it is measured with."""

    id: str
    gpus: int
    options: Options


def measure_keys() -> dict[str, click.Parameter]:
    """Every `runner measure` option by its sweep-file key: the long name without dashes, '-' as '_'."""
    from runner.cli import measure

    keys = {}
    for param in measure.params:
        long = next((o for o in getattr(param, "opts", []) if o.startswith("--")), None)
        if long:
            keys[long[2:].replace("-", "_")] = param
    return keys


def load_sweep(path: Path, out_dir: Path) -> list[Setup]:
    """The setups of the sweep file at `path`, their bundles to go in `out_dir`; raises OptionError."""
    try:
        document = tomllib.loads(read_input(path).decode("utf-8", "replace"))
    except Unreadable as exc:
        raise OptionError(f"{path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"{path}: invalid TOML: {exc}") from None
    unknown = sorted(set(document) - {"defaults", "setup"})
    if unknown:
        raise OptionError(f"{path}: {unknown[0]}: unknown table (a sweep file has [defaults] and [[setup]])")
    defaults = document.get("defaults", {})
    setups = document.get("setup", [])
    if not isinstance(defaults, dict) or not isinstance(setups, list) or not all(isinstance(s, dict) for s in setups):
        raise OptionError(f"{path}: [defaults] must be a table and each [[setup]] a table of keys")
    if not setups:
        raise OptionError(f"{path}: no [[setup]] to measure")
    keys = measure_keys()
    _check_keys(path, "[defaults]", defaults, keys, allow_id=False)
    found: list[Setup] = []
    seen: set[str] = set()
    for number, table in enumerate(setups, 1):
        name = f"setup {table['id']!r}" if isinstance(table.get("id"), str) else f"setup {number}"
        _check_keys(path, name, table, keys, allow_id=True)
        setup = _setup(path, name, {**defaults, **table, "env": {**defaults.get("env", {}), **table.get("env", {})}},
                       keys, out_dir)
        if setup.id in seen:
            raise OptionError(f"{path}: {name}: id: {setup.id!r} is used by an earlier setup; ids are unique")
        seen.add(setup.id)
        found.append(setup)
    return found


def _check_keys(path: Path, where: str, table: dict, keys: dict[str, click.Parameter], allow_id: bool) -> None:
    """Refuse a key that is neither a measure option nor a setup key, naming the closest one."""
    known = set(keys) - set(SWEEP_DECIDES) | set(SETUP_KEYS)
    for key in table:
        if key in SWEEP_DECIDES:
            raise OptionError(f"{path}: {where}: {key}: not set in a sweep file ({SWEEP_DECIDES[key]})")
        if key == "id" and not allow_id:
            raise OptionError(f"{path}: {where}: id: each setup has its own id; it cannot be a default")
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise OptionError(f"{path}: {where}: {key}: unknown key{hint}")


def _setup(path: Path, name: str, table: dict[str, Any], keys: dict[str, click.Parameter], out_dir: Path) -> Setup:
    """One setup's options, parsed by `runner measure`'s own parser."""
    from runner.cli import measure, options_from

    def fail(key: str, message: str) -> OptionError:
        return OptionError(f"{path}: {name}: {key}: {message}")

    run_id = table.get("id")
    if not isinstance(run_id, str) or not run_id:
        raise fail("id", "required: the run id, a slug such as qwen3-8b-h200-tp1")
    if not isinstance(table.get("serve"), str) or not table["serve"].strip():
        raise fail("serve", "required: the command that starts the server, e.g. vllm serve MODEL --port {port}")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise fail("env", "expected a table of strings, e.g. env = { HF_HOME = \"/data/hf\" }")
    args: list[str] = []
    for key, value in table.items():
        if key in SETUP_KEYS:
            continue
        try:
            args += _as_arguments(keys[key], value)
        except OptionError as exc:
            raise fail(key, str(exc)) from None
    args += ["--id", run_id, "--out", str(out_dir / f"{run_id}.json")]
    try:
        context = measure.make_context("measure", args)
        options = options_from(context.params)
    except click.BadParameter as exc:
        key = next((k for k, p in keys.items() if p is exc.param), "?")
        raise fail(key, exc.message) from None
    except click.ClickException as exc:
        raise OptionError(f"{path}: {name}: {exc.format_message()}") from None
    except OptionError as exc:
        raise OptionError(f"{path}: {name}: {exc}") from None
    options = msgspec.structs.replace(options, serve_env=dict(env))
    return Setup(id=run_id, gpus=_gpus(table, options, fail), options=options)


def _as_arguments(param: click.Parameter, value: Any) -> list[str]:
    """A TOML value as the command-line words of its option: a flag, or the option and its text
    (a list joined by commas, as `contexts = ["8K", "32K"]` means `--contexts 8K,32K`)."""
    flag = next(o for o in param.opts if o.startswith("--"))
    if getattr(param, "is_flag", False):
        if not isinstance(value, bool):
            raise OptionError("expected true or false")
        return [flag] if value else []
    if isinstance(value, list):
        value = ",".join(map(str, value))
    if isinstance(value, (dict, bool)) or value is None:
        raise OptionError("expected a number or a string")
    return [flag, str(value)]


def _gpus(table: dict[str, Any], options: Options, fail: Any) -> int:
    """The GPUs a setup asks for: `gpus`, else the serve command's parallel sizes, else 1."""
    gpus = table.get("gpus")
    if gpus is None:
        return parse_launch(options.serve).gpu_count or 1
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= MAX_GPUS:
        raise fail("gpus", f"expected a whole number from 0 to {MAX_GPUS}")
    return gpus
