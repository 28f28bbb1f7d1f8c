"""The `sitegen` command line: parse arguments, call one function, print one line per error."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from runner.schema import RUN_ID_PATTERN
from sitegen.errors import InputError, InputErrors


def _fail(lines: list[str]) -> None:
    for line in lines:
        click.echo(f"error: {line}", err=True)
    sys.exit(1)


@click.group()
@click.version_option(package_name="speed-matrix")
def main() -> None:
    """Publish speed test matrices as a static website."""


@main.command("build")
@click.option("--content", "content", type=click.Path(path_type=Path), default=Path("content"), show_default=True, help="Folder with runs/*.json bundles and pages/*.md.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("site"), show_default=True, help="Output folder; replaced only when the whole build succeeds.")
@click.option("--templates", "templates", type=click.Path(path_type=Path), default=None, help="Templates folder to restyle the site (default: the project's templates/).")
def build_command(content: Path, out: Path, templates: Path | None) -> None:
    """Render every bundle under CONTENT/runs into a static site in OUT."""
    from sitegen.build import build_site

    try:
        report = build_site(content, out, templates)
    except InputErrors as exc:
        _fail([e.line() for e in exc.errors])
    except InputError as exc:
        _fail([exc.line()])
    click.echo(report)


@main.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("content/runs"), show_default=True, help="Folder the bundles are written to.")
@click.option("--id", "id_", default=None, help="Run id (slug) for the bundle; only with one file.")
@click.option("--model", default=None, help="Model display name.")
@click.option("--submitter", default=None, help='Who measured it, e.g. "@handle".')
@click.option("--origin", default=None, help='Where the run came from, e.g. "dev import".')
@click.option("--gpu", default=None, help='GPU model, e.g. "H200 SXM".')
@click.option("--gpu-count", type=int, default=None, help="Number of GPUs.")
@click.option("--vram-per-gpu-gb", type=float, default=None, help="Memory per GPU in GB.")
@click.option("--hardware-type", default=None, help='e.g. "Discrete GPU".')
@click.option("--os", "os_", default=None, help='e.g. "linux".')
@click.option("--quantization", default=None, help='e.g. "NVFP4".')
@click.option("--engine-version", default=None, help="Engine version, when the file lacks it.")
@click.option("--launch-command", default=None, help="The server's launch command (secrets are redacted).")
@click.option("--replace", is_flag=True, help="Overwrite a bundle of the same id in --out.")
def import_command(files: tuple[Path, ...], out: Path, replace: bool, id_: str | None, model: str | None, submitter: str | None, origin: str | None, gpu: str | None, gpu_count: int | None, vram_per_gpu_gb: float | None, hardware_type: str | None, os_: str | None, quantization: str | None, engine_version: str | None, launch_command: str | None) -> None:
    """Import captured pages or llm-inference-bench JSON files as bundles."""
    from sitegen.importers.options import ImportOptions
    from sitegen.import_files import import_files

    if id_ and len(files) > 1:
        _fail(["--id names one bundle, but several files were given"])
    if id_ is not None and not re.match(RUN_ID_PATTERN, id_):
        _fail([f"--id: {id_!r} is not a run id: lowercase ASCII letters, digits and inner hyphens, at most 120"])
    options = ImportOptions(id=id_, model=model, submitter=submitter, origin=origin, gpu=gpu, gpu_count=gpu_count, vram_per_gpu_gb=vram_per_gpu_gb, hardware_type=hardware_type, os=os_, quantization=quantization, engine_version=engine_version, launch_command=launch_command)
    written, errors = import_files(list(files), out, options, replace)
    for path in written:
        click.echo(f"wrote {path}")
    if errors:
        _fail([e.line() for e in errors])


@main.command("serve")
@click.option("--content", "content", type=click.Path(path_type=Path), default=Path("content"), show_default=True, help="Folder with runs/*.json bundles and pages/*.md.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("site"), show_default=True, help="Output folder, rebuilt on every change.")
@click.option("--templates", "templates", type=click.Path(path_type=Path), default=None, help="Templates folder (default: the project's templates/).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port to listen on.")
def serve_command(content: Path, out: Path, templates: Path | None, host: str, port: int) -> None:
    """Build the site, serve it on localhost and rebuild when content or templates change."""
    from sitegen.serve import serve

    serve(content, out, templates, host, port)


@main.command("schema")
def schema_command() -> None:
    """Print the bundle's JSON Schema."""
    from runner.schema import bundle_json_schema

    click.echo(json.dumps(bundle_json_schema(), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
