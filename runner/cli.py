"""The `runner` command line: parse arguments into Options and call one function per command."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from runner.bundle.error_lines import print_error
from runner.bundle.overrides import METADATA_FLAGS, Metadata
from runner.bundle.schema import MAX_TOKENS
from runner.errors import OptionError
from runner.options import (
    ID_FLAG,
    MAX_DURATION_S,
    MAX_OUTPUT_TOKENS,
    MAX_REPEATS,
    MAX_TIMEOUT_S,
    Options,
    parse_base_url,
    parse_count,
    parse_list,
)
from runner.plan import DEFAULT_CONTEXTS_TEXT, DEFAULT_PREFILL_TEXT

if TYPE_CHECKING:
    from runner.progress import RunEvents

_METADATA_FLAGS = (ID_FLAG, *METADATA_FLAGS)


def _parsed_option(parser: Callable[[str], Any], item: Callable[[str], int] | None = None) -> Callable:
    """A click callback parsing a value ("8K,16K" into a sorted list, a URL checked), with one-line errors."""
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        try:
            return parser(value) if item is None else parser(value, item)
        except OptionError as exc:
            raise click.BadParameter(str(exc)) from None
    return convert


class Seconds(click.FloatRange):
    """A number of seconds in a range; NaN and infinity are refused, which FloatRange lets through."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The value as a float within the range, or click's one-line usage error."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return number


def _parsed_urls(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[str]:
    """Each URL checked as --base-url is, in one usage error."""
    try:
        return [parse_base_url(value) for value in values]
    except OptionError as exc:
        raise click.BadParameter(str(exc)) from None


# The defaults --help shows are those of Options, so the two cannot drift apart.
_DEFAULT = Options()
_SERVER_OPTIONS: dict[str, Callable[[Callable], Callable]] = {
    "base_url": click.option("--base-url", default=_DEFAULT.base_url, show_default=True, callback=_parsed_option(parse_base_url),
                             help="OpenAI-compatible base URL."),
    "model": click.option("--model", default=None,
                          help="Served model to measure, as /v1/models lists it (default: the server's only model); "
                               "--model-name sets the name the page shows."),
    "contexts": click.option("--contexts", callback=_parsed_option(parse_list),
                             help=f"Decode contexts, e.g. 8K,16K or token counts (default: {DEFAULT_CONTEXTS_TEXT})."),
    "prefill_contexts": click.option("--prefill-contexts", callback=_parsed_option(parse_list),
                                     help=f"Prefill contexts (default: {DEFAULT_PREFILL_TEXT})."),
    "concurrency": click.option("--concurrency", default=",".join(map(str, _DEFAULT.concurrency)), show_default=True,
                                callback=_parsed_option(parse_list, parse_count), help="Simultaneous requests per column."),
    "duration": click.option("--duration", type=Seconds(min=0.1, max=MAX_DURATION_S), default=_DEFAULT.duration, show_default=True, help="Seconds per measurement."),
    "repeats": click.option("--repeats", type=click.IntRange(min=1, max=MAX_REPEATS), default=_DEFAULT.repeats, show_default=True,
                            help="Measure each decode cell this many times, in passes spread across the run; "
                                 "a cell's figures are the medians of its repeats."),
    "max_output": click.option("--max-output", type=click.IntRange(min=1, max=MAX_OUTPUT_TOKENS), default=_DEFAULT.max_output, show_default=True, help="Max output tokens per request."),
    "kv_capacity": click.option("--kv-capacity", type=click.IntRange(min=1, max=MAX_TOKENS), default=None, help="KV cache size in tokens (default: from the server)."),
    "api": click.option("--api", type=click.Choice(["auto", "completions", "chat"]), default=_DEFAULT.api,
                        show_default=True, help="The API to measure through: /v1/completions, or /v1/chat/completions "
                                                "(prompts sized with the chat template); auto: completions where the server has them."),
    "metrics_urls": click.option("--metrics-url", "metrics_urls", multiple=True, callback=_parsed_urls, metavar="URL",
                                 help="A /metrics page of the server (repeatable: one per replica or worker of a "
                                      "data-parallel, multi-node or disaggregated deployment; their counters are summed). "
                                      "Default: the server's own /metrics."),
    "gpu_energy": click.option("--gpu-energy", is_flag=True,
                               help="Measure energy per token of this machine's GPUs through NVML (every GPU NVML "
                                    "sees; needs pip install -e '.[gpu]')."),
    "gpu_metrics_urls": click.option("--gpu-metrics-url", "gpu_metrics_urls", multiple=True, callback=_parsed_urls,
                                     metavar="URL", help="A DCGM exporter's /metrics, one per node, to measure the GPUs' "
                                                         "energy per token from (run dcgm-exporter with -c 1000 or less)."),
    "api_key_env": click.option("--api-key-env", default=_DEFAULT.api_key_env, show_default=True, help="Environment variable holding the API key."),
    "launch_command": click.option("--launch-command", default=None, help="The command that started the server (secrets are redacted)."),
    "stall_timeout": click.option("--stall-timeout", type=Seconds(min=0.1, max=MAX_TIMEOUT_S), default=_DEFAULT.stall_timeout, show_default=True, help="Seconds without a new token mid-stream (keepalives do not count) before the cell fails."),
    "ready_timeout": click.option("--ready-timeout", type=Seconds(min=0, max=MAX_TIMEOUT_S), default=_DEFAULT.ready_timeout, show_default=True, help="Seconds to wait for the server to become ready."),
}
# What `runner simulate` decides itself: the simulator's URL and its one model, it asks for no key,
# and it is listening before the measurement starts.
_SIMULATOR_SETS = ("base_url", "model", "api_key_env", "ready_timeout")
_SERVE_PORT = 8000


def _server_options(leave_out: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """The options shared by probe, measure and simulate, less those a command decides itself."""
    def apply(function: Callable) -> Callable:
        for name, decorator in reversed(_SERVER_OPTIONS.items()):
            if name not in leave_out:
                function = decorator(function)
        return function
    return apply


# Metadata flags fill click parameters of their own, so --model-name never lands on --model.
_META = "meta_"


def _output_options(function: Callable) -> Callable:
    """--out, --resume, --replace and the metadata overrides."""
    function = click.option("--sign", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                            metavar="KEY", help="Sign the finished bundle and its request records with this SSH private "
                                                "key (ssh-keygen -Y sign), and write their SHA-256 sums.")(function)
    function = click.option("--replace", is_flag=True,
                            help="Overwrite an existing bundle at --out that has no journal beside it.")(function)
    function = click.option("--resume", is_flag=True, help="Continue the run whose journal is beside --out.")(function)
    function = click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
                            help="Bundle path (default: content/runs/<id>.json).")(function)
    for flag, field, kind, text in reversed(_METADATA_FLAGS):
        function = click.option(flag, _META + field, type=kind, default=None, help=text)(function)
    return function


def options_from(params: dict[str, Any]) -> Options:
    """Options from click's parameters; raises OptionError for overrides a bundle could not hold."""
    from runner.bundle.overrides import InvalidOverride, check_overrides

    params = dict(params)
    meta = {field: params.pop(_META + field) for _, field, _, _ in _METADATA_FLAGS if _META + field in params}
    metadata = Metadata(**meta)
    try:
        check_overrides(metadata)
    except InvalidOverride as exc:
        raise OptionError(str(exc)) from None
    return Options(**params, metadata=metadata)


def _options(params: dict[str, Any]) -> Options:
    """Options from click's parameters; overrides a bundle could not hold end the program with one line."""
    try:
        return options_from(params)
    except OptionError as exc:
        _fail(str(exc), 2)


def _fail(message: str, status: int = 1, details: list[str] | None = None) -> NoReturn:
    """End the program with one `error: …` line, the form sitegen's errors take too, after its `details`."""
    from runner.bundle.terminal_text import printable

    for line in details or []:
        click.echo(printable(line), err=True)
    print_error(message)
    sys.exit(status)


def _run(coroutine_factory: Callable[[], Any], reporter: RunEvents | None = None) -> Any:
    """Run a coroutine; user errors end the program with one line and exit status 1.

    After Ctrl-C, the line gives the command that resumes the run `reporter` was showing.
    """
    from runner.errors import MeasureError
    from runner.interrupts import run_until_interrupted
    from runner.journal import journal_path
    from runner.progress import resume_command

    try:
        return run_until_interrupted(coroutine_factory())
    except MeasureError as exc:
        _fail(str(exc), details=exc.details)
    except KeyboardInterrupt:
        click.echo(err=True)  # leave the terminal's ^C on its own line
        if reporter is None or reporter.out is None:
            _fail("interrupted; finished cells are kept in the journal; continue with --resume", 130)
        _fail(f"interrupted; finished cells are kept in {journal_path(reporter.out)}; resume with: "
              f"{resume_command(sys.argv, reporter.out)}", 130)


@click.group()
@click.version_option(package_name="speed-matrix")
def main() -> None:
    """Measure how fast an LLM inference server is and write a result bundle."""


@main.command()
@_server_options()
def probe(**params: Any) -> None:
    """Print what would be recorded and the planned matrix, without measuring."""
    from runner.run_preview import run_preview

    click.echo(_run(lambda: run_preview(_options(params))))


@main.command()
@_server_options()
@_output_options
@click.option("--serve", default=None, metavar="CMD",
              help="Start the server with this shell command, measure it, then stop it; {port} in it becomes "
                   "a free port (and the base URL follows). Its output goes to <id>.server.log beside the bundle.")
def measure(**params: Any) -> None:
    """Measure the prefill sweep and the decode matrix into a bundle."""
    from runner.measure import measure as run_measure
    from runner.progress import reporter_for

    reporter = reporter_for(sys.stderr)
    out = _run(lambda: run_measure(_options(params), progress=reporter), reporter)
    click.echo(str(out))


@main.command()
@_server_options(leave_out=_SIMULATOR_SETS)
@_output_options
@click.option("--sim-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="JSON file with simulator settings (SimConfig fields).")
@click.option("--serve-only", is_flag=True, help="Only run the simulator (on --port) until Ctrl-C.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help=f"Simulator port (default: {_SERVE_PORT} with --serve-only, else any free port).")
def simulate(sim_config: Path | None, serve_only: bool, port: int | None, **params: Any) -> None:
    """Measure the built-in simulated server (a demo that needs no GPU)."""
    from runner.progress import reporter_for
    from runner.simulate import load_sim_config, simulate_run
    from runner.simulator import PortUnavailable, serve

    try:
        config = load_sim_config(sim_config)
        if serve_only:
            sys.exit(serve(config, "127.0.0.1", _SERVE_PORT if port is None else port))
        reporter = reporter_for(sys.stderr)
        out = _run(lambda: simulate_run(_options(params), config, port or 0, sim_config, reporter), reporter)
    except OptionError as exc:
        _fail(str(exc))
    except PortUnavailable as exc:
        _fail(f"{exc}; pass --port")
    click.echo(str(out))


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("content/runs"),
              show_default=True, help="Where each setup's bundle, journal and server log go (<id>.json).")
@click.option("--setup", "only", multiple=True, metavar="ID", help="Measure only this setup (repeatable).")
@click.option("--dry-run", is_flag=True, help="Print the setups, their matrices, GPUs and estimates; measure nothing.")
@click.option("--slurm", is_flag=True, help="Submit each setup as one Slurm job (sbatch), wait, and collect the bundles.")
@click.option("--partition", default=None, help="Slurm partition (--slurm).")
@click.option("--account", default=None, help="Slurm account (--slurm).")
@click.option("--time", "time_limit", default=None, help="Slurm time limit per job, e.g. 2:00:00 (--slurm).")
@click.option("--sbatch-arg", "sbatch_args", multiple=True, metavar="ARG",
              help="An extra sbatch argument, e.g. --sbatch-arg=--qos=high (repeatable; --slurm).")
def sweep(file: Path, out_dir: Path, only: tuple[str, ...], dry_run: bool, slurm: bool, partition: str | None,
          account: str | None, time_limit: str | None, sbatch_args: tuple[str, ...]) -> None:
    """Measure every setup of a sweep FILE (TOML), starting and stopping each server; resumable."""
    from runner.fleet.sweep import SlurmSettings, sweep_main

    settings = SlurmSettings(partition=partition, account=account, time=time_limit, extra=list(sbatch_args))
    sys.exit(sweep_main(file, out_dir, only, dry_run, settings if slurm else None, sys.argv))
