"""The `sitegen` command line: parse arguments, call one function, print one line per error."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from runner.bundle.error_lines import print_error
from runner.bundle.ids import is_run_id, not_a_run_id
from runner.bundle.overrides import METADATA_FLAGS, MetadataFlag
from sitegen.errors import InputError, InputErrors, UsageError


def _fail(lines: list[str]) -> None:
    for line in lines:
        print_error(line)
    sys.exit(1)


@click.group()
@click.version_option(package_name="speed-matrix")
def main() -> None:
    """Publish speed test matrices as a static website."""


def run() -> None:
    """`sitegen` as a program: main(), then an exit that does not free the build's records object by
    object first (at 10,000 runs a large share of a rebuild); the process ends either way."""
    try:
        main()
        code: object = 0
    except SystemExit as done:
        code = done.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


@main.command("build")
@click.option("--content", "content", type=click.Path(path_type=Path), default=Path("content"), show_default=True, help="Folder with runs/*.json bundles and pages/*.md.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("site"), show_default=True, help="Output folder; replaced only when the whole build succeeds.")
@click.option("--templates", "templates", type=click.Path(path_type=Path), default=None, help="Templates folder to restyle the site (default: the project's templates/).")
@click.option("--jobs", "jobs", type=click.IntRange(min=1), default=None, help="Processes that render pages (default: one per core).")
@click.option("--strict", "strict", is_flag=True, help="Leave out the runs `sitegen check` finds inconsistent (else built and marked).")
def build_command(content: Path, out: Path, templates: Path | None, jobs: int | None, strict: bool) -> None:
    """Render every bundle under CONTENT/runs into a static site in OUT."""
    from sitegen.build import build_site
    from sitegen.support.progress import Progress

    try:
        report = build_site(content, out, templates, jobs=jobs, progress=Progress.for_terminal(), strict=strict)
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
                                  '"<tool> import" for other tools\' files).')
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
@click.option("--id", "id_", default=None, help="Run id (slug) for the bundle: of one file, or of the one bundle a sweep's files make.")
@_metadata_options
@click.option("--replace", is_flag=True, help="Overwrite a bundle of the same id in --out.")
def import_command(files: tuple[Path, ...], out: Path, replace: bool, id_: str | None, **fields: Any) -> None:
    """Import captured pages, bundles and other tools' results as bundles.

    Formats are recognised by content: speed test matrix pages (captured text),
    llm-inference-bench's benchmark_results.json, and benchmark sweeps: `vllm bench serve
    --save-result` JSON, GuideLLM's benchmarks JSON and AIPerf's profile_export_aiperf.json.
    The sweep files given (and those under a folder given, such as a `vllm bench sweep`
    output folder) make one bundle per tool and model, a decode cell per input length and
    concurrency; under --id they must all be of one sweep.
    """
    from runner.bundle.overrides import InvalidOverride, check_overrides
    from sitegen.importers.import_files import import_files
    from sitegen.importers.options import ImportOptions

    if id_ is not None and not is_run_id(id_):
        _fail([f"--id: {not_a_run_id(id_)}"])
    options = ImportOptions(id=id_, **fields)
    try:
        check_overrides(options)  # a flag's value the bundle cannot hold is the flag's fault, not the file's
    except InvalidOverride as exc:
        _fail([str(exc)])
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
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="Port to listen on (not 8000, which vLLM and `runner simulate` take).")
def serve_command(content: Path, out: Path, templates: Path | None, host: str, port: int) -> None:
    """Build the site, serve it on localhost and rebuild when content or templates change."""
    from sitegen.serve.command import serve

    try:
        serve(content, out, templates, host, port)
    except (InputError, UsageError) as exc:
        _fail([str(exc)])


def _number(flag: str, text: str | None, required: bool = False) -> float | None:
    """A number option read as text, so that a typo gets one error line rather than click's usage screen."""
    if text is None:
        if required:
            _fail([f"{flag} is required"])
        return None
    try:
        return float(text)
    except ValueError:
        _fail([f"{flag}: not a number: {text!r}"])


@main.command("capacity")
@click.argument("bundle", type=click.Path(path_type=Path))
@click.option("--ttft-ms", "ttft_ms", default=None, metavar="MS", help="Target (required): median time to first token at most this many ms.")
@click.option("--min-tok-s-per-user", "min_tok_s", default=None, metavar="TOK_S", help="Target (required): median per-request tok/s at least this.")
@click.option("--gpu-hour-usd", "price", default=None, metavar="USD", help="Price of one GPU for an hour, in USD: adds the cost of a million output tokens.")
@click.option("--by", "by", default="tok_s_per_gpu", show_default=True, metavar="FIGURE",
              help="Of the cells that meet both targets, choose the one with the most tok/s (tok_s_per_gpu), or by its valid energy "
                   "reading: the fewest J per output token (joules_per_output_token) or the most tok/s per kW (tok_s_per_kw).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per context, instead of a table.")
def capacity_command(bundle: Path, ttft_ms: str, min_tok_s: str, price: str | None, by: str, as_json: bool) -> None:
    """For each context of BUNDLE, the Valid cell with the most total tok/s that meets both targets
    (or, with --by, the one with the best energy figure)."""
    from sitegen.content.loader import load_bundle
    from sitegen.figures.capacity import check_by, check_target, json_records
    from sitegen.views.capacity_view import text_table

    try:
        target = check_target(_number("--ttft-ms", ttft_ms, True), _number("--min-tok-s-per-user", min_tok_s, True),
                              _number("--gpu-hour-usd", price))
        check_by(by)
        run = load_bundle(bundle)
    except ValueError as exc:
        _fail([str(exc)])
    except InputError as exc:
        _fail([exc.line()])
    click.echo(json.dumps(json_records(run, target, by), indent=2) if as_json else text_table(run, target, by))


@main.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--allowed-signers", "allowed_signers", type=click.Path(path_type=Path), default=None,
              help="The ssh-keygen allowed_signers file to verify signatures with (default: the nearest allowed_signers above each bundle).")
def check_command(paths: tuple[Path, ...], allowed_signers: Path | None) -> None:
    """Check bundles (files, or folders searched for them; default: content) before they are published:
    schema, internal consistency, recomputation from raw records, method, duplicates, secrets and
    signatures. One line per problem, then each bundle's verdict: verified, consistent or
    inconsistent. Exits 1 if any bundle is inconsistent."""
    from sitegen.check.command import run_check

    sys.exit(run_check(paths or (Path("content"),), allowed_signers))


@main.command("files")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("site"), show_default=True, help="The built site.")
@click.option("--since", "since", type=click.Path(path_type=Path), default=None,
              help="A listing this command printed for an earlier upload: print what changed since instead.")
def files_command(out: Path, since: Path | None) -> None:
    """List the built site's files, each with the key of the output it belongs to (`key<TAB>path`);
    with --since, `+ path` for each file to upload and `- path` for each to delete. Same key, same bytes."""
    from sitegen.publish.listing import changes, format_listing, published_listing, read_listing

    try:
        listing = published_listing(out)
        if since is None:
            click.echo(format_listing(listing), nl=False)
        else:
            click.echo("".join(f"{line}\n" for line in changes(read_listing(since), listing)), nl=False)
    except (InputError, UsageError) as exc:
        _fail([str(exc)])


@main.command("schema")
def schema_command() -> None:
    """Print the bundle's JSON Schema."""
    from runner.bundle.schema import bundle_json_schema

    click.echo(json.dumps(bundle_json_schema(), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
