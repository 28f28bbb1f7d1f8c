"""The `sitegen` command line: parse arguments, call one function, print one line per error."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from runner.options import METADATA_FLAGS, MetadataFlag
from runner.schema import RUN_ID_PATTERN
from sitegen.errors import InputError, InputErrors, UsageError


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
@click.option("--jobs", "jobs", type=click.IntRange(min=1), default=None, help="Processes that render pages (default: one per core).")
def build_command(content: Path, out: Path, templates: Path | None, jobs: int | None) -> None:
    """Render every bundle under CONTENT/runs into a static site in OUT."""
    from sitegen.build import build_site
    from sitegen.progress import Progress

    try:
        report = build_site(content, out, templates, jobs=jobs, progress=Progress.for_terminal())
    except InputErrors as exc:
        _fail([e.line() for e in exc.errors])
    except InputError as exc:
        _fail([exc.line()])
    click.echo(report)


def _for_import(flag: MetadataFlag) -> MetadataFlag:
    """A `runner measure` metadata flag as `sitegen import` spells it: --model is the display name here."""
    if flag.flag == "--model-name":
        return flag._replace(flag="--model", help="Model display name.")
    if flag.flag == "--origin":
        return flag._replace(help="Where the run came from (default: a page's byline, a bundle's own, "
                                  '"llm-inference-bench import" for its files).')
    return flag


# The runner's metadata flags, and the launch command (which the runner takes with its own help).
_METADATA_FLAGS = (
    *map(_for_import, METADATA_FLAGS),
    MetadataFlag("--launch-command", "launch_command", str, "The server's launch command (secrets are redacted)."),
)


def _metadata_options(function: Callable) -> Callable:
    """The --model … --launch-command options of `sitegen import`, in the table's order."""
    for flag, field, kind, text in reversed(_METADATA_FLAGS):
        function = click.option(flag, field, type=kind, default=None, help=text)(function)
    return function


@main.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("content/runs"), show_default=True, help="Folder the bundles are written to.")
@click.option("--id", "id_", default=None, help="Run id (slug) for the bundle; only with one file.")
@_metadata_options
@click.option("--replace", is_flag=True, help="Overwrite a bundle of the same id in --out.")
def import_command(files: tuple[Path, ...], out: Path, replace: bool, id_: str | None, **fields: Any) -> None:
    """Import captured pages or llm-inference-bench JSON files as bundles."""
    from sitegen.importers.options import ImportOptions
    from sitegen.import_files import import_files

    if id_ and len(files) > 1:
        _fail(["--id names one bundle, but several files were given"])
    if id_ is not None and not re.match(RUN_ID_PATTERN, id_):
        _fail([f"--id: {id_!r} is not a run id: lowercase ASCII letters, digits and inner hyphens, at most 120"])
    written, errors = import_files(list(files), out, ImportOptions(id=id_, **fields), replace)
    for path in written:
        click.echo(f"wrote {path}")
    if errors:
        _fail([e.line() for e in errors])


@main.command("serve")
@click.option("--content", "content", type=click.Path(path_type=Path), default=Path("content"), show_default=True, help="Folder with runs/*.json bundles and pages/*.md.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("site"), show_default=True, help="Output folder, rebuilt on every change.")
@click.option("--templates", "templates", type=click.Path(path_type=Path), default=None, help="Templates folder (default: the project's templates/).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="Port to listen on (not 8000, which vLLM and `runner simulate` take).")
def serve_command(content: Path, out: Path, templates: Path | None, host: str, port: int) -> None:
    """Build the site, serve it on localhost and rebuild when content or templates change."""
    from sitegen.serve import serve

    try:
        serve(content, out, templates, host, port)
    except (InputError, UsageError) as exc:
        _fail([str(exc)])


@main.command("schema")
def schema_command() -> None:
    """Print the bundle's JSON Schema."""
    from runner.schema import bundle_json_schema

    click.echo(json.dumps(bundle_json_schema(), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
