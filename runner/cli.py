"""The `runner` command line: parse arguments into Options and call one function per command."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import msgspec

from runner.options import DEFAULT_BASE_URL, Metadata, OptionError, Options, parse_count, parse_list

_METADATA_FLAGS = (
    ("--id", "id", str, "Bundle id (slug); default: model, GPU, engine and date."),
    ("--model-name", "model", str, "Model display name on the page."),
    ("--submitter", "submitter", str, "Who measured, e.g. @handle."),
    ("--origin", "origin", str, "Origin label (default: runner)."),
    ("--hardware-type", "hardware_type", str, "Hardware type, e.g. 'Discrete GPU'."),
    ("--gpu", "gpu", str, "GPU name, e.g. 'H200 NVL'."),
    ("--gpu-count", "gpu_count", int, "Number of GPUs."),
    ("--vram-per-gpu-gb", "vram_per_gpu_gb", float, "VRAM per GPU in GB (as sold, e.g. 141)."),
    ("--os", "os", str, "Operating system."),
    ("--engine-name", "engine_name", str, "Engine name, e.g. vllm."),
    ("--engine-version", "engine_version", str, "Engine version."),
    ("--quantization", "quantization", str, "Quantization, e.g. FP8."),
    ("--backend", "backend", str, "Backend, e.g. cuda."),
    ("--repository", "repository", str, "Engine repository."),
    ("--build", "build", str, "Engine build."),
    ("--commit", "commit", str, "Engine commit."),
    ("--served-model", "served_model", str, "Served model name to record."),
    ("--revision", "revision", str, "Model revision."),
)


def _list_option(parser: Callable[[str], Any], item: Callable[[str], int] | None = None) -> Callable:
    """A click callback turning "8K,16K" into a sorted list, with one-line errors."""
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        try:
            return parser(value) if item is None else parser(value, item)
        except OptionError as exc:
            raise click.BadParameter(str(exc)) from None
    return convert


def _server_options(function: Callable) -> Callable:
    """Options shared by probe, measure and simulate."""
    decorators = [
        click.option("--base-url", default=DEFAULT_BASE_URL, show_default=True, help="OpenAI-compatible base URL."),
        click.option("--model", default=None, help="Model to measure (default: the server's only model)."),
        click.option("--contexts", callback=_list_option(parse_list), help="Decode contexts, e.g. 8K,16K or token counts."),
        click.option("--prefill-contexts", callback=_list_option(parse_list), help="Prefill contexts (default: contexts + max length)."),
        click.option("--concurrency", default="1,2,4,8,16,32,64,128", show_default=True,
                     callback=_list_option(parse_list, parse_count), help="Simultaneous requests per column."),
        click.option("--duration", type=click.FloatRange(min=0.1), default=30.0, show_default=True, help="Seconds per measurement."),
        click.option("--max-output", type=click.IntRange(min=1), default=4096, show_default=True, help="Max output tokens per request."),
        click.option("--kv-capacity", type=click.IntRange(min=1), default=None, help="KV cache size in tokens (default: from the server)."),
        click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True, help="Environment variable holding the API key."),
        click.option("--launch-command", default=None, help="The command that started the server (secrets are redacted)."),
        click.option("--stall-timeout", type=click.FloatRange(min=0.1), default=20.0, show_default=True, help="Seconds without data mid-stream before the cell fails."),
        click.option("--ready-timeout", type=click.FloatRange(min=0), default=60.0, show_default=True, help="Seconds to wait for the server to become ready."),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def _output_options(function: Callable) -> Callable:
    """--out, --resume and the metadata overrides."""
    function = click.option("--resume", is_flag=True, help="Continue the run whose journal is beside --out.")(function)
    function = click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
                            help="Bundle path (default: content/runs/<id>.json).")(function)
    for flag, field, kind, text in reversed(_METADATA_FLAGS):
        function = click.option(flag, field, type=kind, default=None, help=text)(function)
    return function


def _options(params: dict[str, Any]) -> Options:
    """Options from click's parameters."""
    meta = {field: params.pop(field) for _, field, _, _ in _METADATA_FLAGS if field in params}
    return Options(**params, metadata=Metadata(**meta))


def _run(coroutine_factory: Callable[[], Any]) -> Any:
    """Run a coroutine; user errors end the program with one line and exit status 1."""
    from runner.measure import MeasureError

    try:
        return asyncio.run(coroutine_factory())
    except MeasureError as exc:
        click.echo(f"runner: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("\nrunner: interrupted; finished cells are kept in the journal; continue with --resume", err=True)
        sys.exit(130)


@click.group()
def main() -> None:
    """Measure how fast an LLM inference server is and write a result bundle."""


@main.command()
@_server_options
def probe(**params: Any) -> None:
    """Print what would be recorded and the planned matrix, without measuring."""
    from runner.probe_report import probe_report

    click.echo(_run(lambda: probe_report(_options(params))))


@main.command()
@_server_options
@_output_options
def measure(**params: Any) -> None:
    """Measure the prefill sweep and the decode matrix into a bundle."""
    from runner.measure import measure as run_measure

    out = _run(lambda: run_measure(_options(params)))
    click.echo(str(out))


@main.command()
@_server_options
@_output_options
@click.option("--sim-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="JSON file with simulator settings (SimConfig fields).")
@click.option("--serve-only", is_flag=True, help="Only run the simulator (on --port) until Ctrl-C.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port for --serve-only.")
def simulate(sim_config: Path | None, serve_only: bool, port: int, **params: Any) -> None:
    """Measure the built-in simulated server (a demo that needs no GPU)."""
    from runner.simulate import load_sim_config, serve_simulator, simulate_run

    try:
        config = load_sim_config(sim_config)
    except (OSError, msgspec.ValidationError, msgspec.DecodeError, ValueError) as exc:
        click.echo(f"runner: {sim_config}: {exc}", err=True)
        sys.exit(1)
    if serve_only:
        serve_simulator(config, port)
        return
    out = _run(lambda: simulate_run(_options(params), config))
    click.echo(str(out))
