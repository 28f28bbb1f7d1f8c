"""The driver of `runner measure`: probe, plan, then measure every cell into journal and bundle."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from runner.bundle.files import write_bundle
from runner.bundle.records import cut_torn_tail, records_path
from runner.bundle.redact import known_secrets, redact
from runner.bundle.signatures import NAMESPACE, SigningError, sign, signature_path, sums_path
from runner.client import Client, Trace
from runner.endpoints import MetricsEndpoints
from runner.energy import EnergyMeter, EnergyUnavailable, dcgm_meter, nvml_meter
from runner.errors import (
    JournalError,
    MeasureError,
    OptionError,
    RequestFailed,
    ServerError,
)
from runner.fleet.server_log import server_log_path
from runner.fleet.server_process import ServerProcess, launch
from runner.hardware import detect_gpus
from runner.journal import Header, Journal, journal_path
from runner.measurement import Measurement, left_to_measure
from runner.metadata import build_header, check_bundle_fields, is_local
from runner.options import Options
from runner.plan import plan_for
from runner.priority import raised_priority
from runner.progress import RunEvents, reporter_for, reporting
from runner.prompts import request_body
from runner.server_facts import ServerFacts, probe_server

DEFAULT_RUNS_DIR = Path("content/runs")


async def first_request(client: Client, facts: ServerFacts, api: str) -> str:
    """Send one short request through `api` ("auto": completions, else chat where the server has no
    completions route); the server must answer it. It settles facts.api and how tokens are counted."""
    tried = ["completions", "chat"] if api == "auto" else [api]
    for choice in tried:
        body = request_body(facts.model, facts.engine == "llama.cpp", "Hello", 4, facts.ignore_eos, choice)
        try:
            trace = await client.stream(body, Trace(), facts.model)
        except RequestFailed as exc:
            if choice != tried[-1] and str(exc).startswith("HTTP 404 "):
                continue
            raise MeasureError(f"the server failed a first test request ({choice} API): {exc}") from None
        facts.api = choice
        return trace.counted_by
    raise AssertionError("unreachable: the last API tried returns or raises")


def _find_journal(options: Options) -> Path:
    """The journal --resume continues: beside --out, else the newest under content/runs."""
    if options.out:
        return journal_path(options.out)
    journals = sorted(DEFAULT_RUNS_DIR.glob("*.journal.jsonl"), key=lambda p: p.stat().st_mtime)
    if not journals:
        raise MeasureError(f"nothing to resume: no journal in {DEFAULT_RUNS_DIR}/ (pass --out of the run to resume)")
    return journals[-1]


async def energy_meter(options: Options, client: Client) -> EnergyMeter | None:
    """The meter of the GPUs' energy the options ask for (NVML, or DCGM exporters), or None; a
    meter that cannot read stops the run before anything is measured."""
    if options.gpu_energy and options.gpu_metrics_urls:
        raise OptionError("--gpu-energy reads this machine's GPUs and --gpu-metrics-url an exporter's: choose one")
    try:
        if options.gpu_energy:
            return nvml_meter()
        if options.gpu_metrics_urls:
            return await dcgm_meter(client, options.gpu_metrics_urls)
    except EnergyUnavailable as exc:
        raise MeasureError(f"cannot measure energy: {exc}") from None
    return None


def _refuse_to_overwrite(out: Path, replace: bool) -> None:
    """Stop before a new run meets a finished run's journal, or a bundle with none, at the same path."""
    path = journal_path(out)
    if path.is_file() and path.stat().st_size and not left_to_measure(Journal.load(path, lock=False)):
        raise MeasureError(f"{out} is a finished run already (ids are made to the minute): "
                           "choose another --out or --id, or move the old run away")
    if not path.exists() and (out.exists() or out.is_symlink()) and not replace:
        raise MeasureError(f"{out} exists already and has no journal beside it; pass --replace to overwrite it, "
                           "or choose another --out")
    if out.exists() and not out.is_file():
        raise MeasureError(f"{out} exists and is not a regular file; choose another --out")


async def measure(options: Options, simulated: bool = False, progress: RunEvents | None = None) -> Path:
    """Run `runner measure`: returns the path of the finished bundle.

    The run goes at a raised priority where the system allows it, so that other work on the
    client machine delays the reading of tokens less (runner.priority); the bundle records it.
    With `options.sign`, the finished bundle and its request records are signed with that key.
    """
    with raised_priority():
        out = await _measure_run(options, simulated, progress)
    if options.sign:
        files = [out] + [path for path in (records_path(out),) if path.exists()]
        try:
            sign(files, options.sign)
        except (SigningError, OSError, subprocess.TimeoutExpired) as exc:
            raise MeasureError(f"the run is measured, but {exc}; sign it later with: "
                               f"ssh-keygen -Y sign -f KEY -n {NAMESPACE} {out}") from None
    return out


async def _measure_run(options: Options, simulated: bool, progress: RunEvents | None) -> Path:
    """The run itself: (start the server,) probe, then a new journal or the resumed one, then every
    planned cell; a server the runner started is stopped however the run ends."""
    api_key = os.environ.get(options.api_key_env) or None
    server: ServerProcess | None = None
    if options.serve:
        secrets_known = known_secrets(api_key, options.serve, {**os.environ, **options.serve_env})
        server = launch(options.serve, options.serve_env, _first_log_path(options), secrets_known)
        options = msgspec.structs.replace(options, base_url=server.base_url(options.base_url),
                                          launch_command=options.launch_command or server.recorded_command)
    else:
        secrets_known = known_secrets(api_key, options.launch_command)
    client = Client(options.base_url, api_key, options.stall_timeout)
    journal: Journal | None = None
    out: Path | None = None
    try:
        ready_by = time.monotonic() + options.ready_timeout
        if server:
            await server.wait_ready(client, options.ready_timeout)
        models_wait = options.ready_timeout if server is None else round(max(0.0, ready_by - time.monotonic()), 1)
        facts = await probe_server(client, options.model, models_wait, options.kv_capacity, options.launch_command,
                                   MetricsEndpoints(client, options.metrics_urls))
        if server:
            server.mark_ready()
        facts.token_counts = await first_request(client, facts, options.api)
        energy = await energy_meter(options, client)
        if options.resume:
            path = _find_journal(options)
            journal = Journal.load(path)
            served = journal.header.bundle.run.served_model
            if served and served != facts.model:
                raise MeasureError(f"{path} measured model {served!r}, but the server serves {facts.model!r}")
            out = options.out or path.with_name(path.name.removesuffix(".journal.jsonl") + ".json")
        else:
            plan = plan_for(options, facts)
            started = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
            gpus = detect_gpus() if is_local(options.base_url) else None
            header = build_header(options, facts, gpus, secrets_known, started, simulated)
            check_bundle_fields(header)
            out = options.out or DEFAULT_RUNS_DIR / f"{header.id}.json"
            _refuse_to_overwrite(out, options.replace)
            journal = Journal.create(journal_path(out), Header(bundle=header, plan=plan))
        if options.resume:
            cut_torn_tail(records_path(out))
        else:  # a replaced run's records (and signatures) are not this run's
            for stale in (records_path(out), signature_path(out), signature_path(records_path(out)), sums_path(out)):
                stale.unlink(missing_ok=True)
        if server:
            server.log.move_to(server_log_path(out))
        progress = progress or reporter_for(sys.stderr)
        with reporting(progress):
            await Measurement(options, client, facts, journal, out, progress, secrets_known, server, energy).run()
        return out
    except (ServerError, JournalError, OptionError, MeasureError) as exc:
        # Every message that leaves the runner passes here, so none can carry the key.
        raise _with_server_log(MeasureError(redact(str(exc), secrets_known)), server) from None
    except OSError as exc:  # a full disk, an --out below a file or in /proc
        kept = f"; finished cells are kept in {journal.path}" if journal else ""
        raise MeasureError(redact(f"cannot write {exc.filename or 'the run'}: {exc.strerror or exc}{kept}",
                                  secrets_known)) from None
    finally:
        try:
            if server:
                server.stop()
                if journal and out:  # the bundle says how the server ended
                    write_bundle(out, msgspec.structs.replace(journal.bundle(), launch=server.record()))
        finally:
            if journal:
                journal.close()
            await client.aclose()


def _first_log_path(options: Options) -> Path:
    """Where a launched server logs until the run's bundle path is known: beside --out, else a
    dated name in the runs folder (moved beside the bundle once its id is known)."""
    if options.out:
        return server_log_path(options.out)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return DEFAULT_RUNS_DIR / f"server-{stamp}-{os.getpid()}.server.log"


def _with_server_log(error: MeasureError, server: ServerProcess | None) -> MeasureError:
    """The error, with where the launched server's log is and its last lines, once it has ended."""
    if server is None or server.exit_status is None:
        return error
    return MeasureError(f"{error}; the server's log: {server.log.path}",
                        [f"the server's last lines ({server.log.path}):", *(f"  {line}" for line in server.log_tail())])
