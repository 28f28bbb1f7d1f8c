"""The driver of `runner measure`: probe, plan, then measure every cell into journal and bundle."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

from runner.bundle.files import write_bundle
from runner.bundle.redact import redact
from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint
from runner.cell import CellRunner
from runner.client import Client, Trace
from runner.errors import (
    JournalError,
    MeasureError,
    OptionError,
    RequestFailed,
    ServerError,
)
from runner.hardware import detect_gpus
from runner.journal import Header, Journal, journal_path
from runner.metadata import (
    CHUNK_COUNTING_NOTE,
    build_header,
    check_bundle_fields,
    is_local,
)
from runner.options import Options
from runner.plan import (
    CELL_OVERHEAD_S,
    Item,
    estimate_seconds,
    measuring_order,
    over_capacity,
    plan_for,
)
from runner.priority import raised_priority
from runner.progress import RunEvents, item_label, reporter_for, reporting
from runner.prompts import PromptMaker, request_body
from runner.server_facts import (
    ServerFacts,
    busy_requests,
    probe_server,
    scrape,
    wait_ready,
)

DEFAULT_RUNS_DIR = Path("content/runs")
# Before a cold prefill, wait up to SETTLE_S for streams the last cell cut off to drain from the
# server; without a running gauge to watch, wait SETTLE_BLIND_S.
SETTLE_S = 10.0
SETTLE_BLIND_S = 1.0


TOKEN_COUNTS = {
    "usage": "the server's running usage in every chunk",
    "timings": "llama.cpp's running predicted_n in every chunk",
    "chunks": CHUNK_COUNTING_NOTE,
}


async def first_request(client: Client, facts: ServerFacts) -> str:
    """Send one short request: the server must answer it, and it shows how tokens can be counted."""
    body = request_body(facts.model, facts.engine == "llama.cpp", "Hello", 4, facts.ignore_eos)
    try:
        trace = await client.stream(body, Trace(), facts.model)
    except RequestFailed as exc:
        raise MeasureError(f"the server failed a first test request: {exc}") from None
    return trace.counted_by


def _find_journal(options: Options) -> Path:
    """The journal --resume continues: beside --out, else the newest under content/runs."""
    if options.out:
        return journal_path(options.out)
    journals = sorted(DEFAULT_RUNS_DIR.glob("*.journal.jsonl"), key=lambda p: p.stat().st_mtime)
    if not journals:
        raise MeasureError(f"nothing to resume: no journal in {DEFAULT_RUNS_DIR}/ (pass --out of the run to resume)")
    return journals[-1]


def journaled(journal: Journal, context: int, concurrency: int | None, repeat: int = 0) -> PrefillPoint | DecodeCell | None:
    """The journal's entry for one matrix item, or None."""
    if concurrency is None:
        return journal.points.get(context)
    return journal.decode_at(context, concurrency, repeat)


def left_to_measure(journal: Journal) -> int:
    """How many items of the journal's plan are not finished yet."""
    return sum(1 for c, n, r in measuring_order(journal.header.plan) if not journal.finished(journaled(journal, c, n, r)))


class Measurement:
    """One run of the matrix against one server, journaled as it goes."""

    def __init__(self, options: Options, client: Client, facts: ServerFacts, journal: Journal,
                 out: Path, progress: RunEvents, api_key: str | None) -> None:
        """Measure the journal's plan on the server behind `client`, writing the bundle to `out`."""
        self.options = options
        self.client = client
        self.facts = facts
        self.journal = journal
        self.plan = journal.header.plan
        self.out = out
        self.progress = progress
        self.secrets = [api_key] if api_key else []
        self.maker = PromptMaker(client, facts.model, facts.engine, secrets.token_hex(4))
        self.cells = CellRunner(client, self.maker, facts.model, self.plan.max_output, facts.ignore_eos,
                                (lambda: scrape(client)) if facts.queue_gauge else None)
        self.cells.on_phase = progress.phase
        self.window_overhead: list[float] = []

    def _eta(self, remaining: list[Item]) -> float:
        """Seconds left, each decode cell costing its window plus the mean overhead seen so far."""
        overhead = statistics.fmean(self.window_overhead) if self.window_overhead else CELL_OVERHEAD_S
        return estimate_seconds(self.plan, remaining, overhead)

    async def run(self) -> Bundle:
        """Measure every unfinished item; the bundle on disk is complete after each one."""
        self.progress.note(f"token counts: {TOKEN_COUNTS[self.facts.token_counts or 'chunks']}")
        try:
            mode = await self.maker.setup()
        except RequestFailed as exc:
            raise MeasureError(f"cannot build prompts of exact length: {exc}") from None
        self.progress.note(f"prompts: {mode} mode; journal: {self.journal.path}; bundle: {self.out}")
        write_bundle(self.out, self.journal.bundle())
        if not left_to_measure(self.journal):
            self.progress.note("nothing left to measure: every item of this run is finished")
        items = measuring_order(self.plan)
        self.progress.run_started(self.plan, self.journal.bundle(), self.out,
                                  len(items) - left_to_measure(self.journal), len(items))
        for index, (context, concurrency, repeat) in enumerate(items):
            if self.journal.finished(journaled(self.journal, context, concurrency, repeat)):
                continue
            if self.plan.repeats > 1 and concurrency is not None:
                self.progress.note(f"{item_label(context, concurrency)}: repeat {repeat + 1} of {self.plan.repeats}")
            done = len(items) - left_to_measure(self.journal)
            self.progress.cell_started(context, concurrency, done, self._eta(items[index:]))
            try:
                item = await self._measure(context, concurrency)
            except RequestFailed as exc:  # building the prompts failed
                item = (PrefillPoint(context_tokens=context, status="Failed", error=str(exc)) if concurrency is None
                        else DecodeCell(context_tokens=context, concurrency=concurrency, status="Failed", error=str(exc)))
            if item.error:
                item.error = redact(item.error, self.secrets)
            self.journal.record(item, repeat)
            write_bundle(self.out, self.journal.bundle())
            if isinstance(item, PrefillPoint):
                self.progress.prefill_done(item)
            else:
                self.progress.cell_finished(item)
            if item.status == "Failed":
                await self._check_alive(item.error)
        return self.journal.bundle()

    async def _measure(self, context: int, concurrency: int | None) -> PrefillPoint | DecodeCell:
        plan = self.plan
        if concurrency is None:
            if plan.kv_capacity is not None and context > plan.kv_capacity:
                return PrefillPoint(context_tokens=context, status="Over capacity")
            length = min(context, plan.max_model_len - 1) if plan.max_model_len else context
            self.progress.phase("building the prompt")
            prompt = await self.maker.make(length, 0)
            self.progress.phase("settling")
            await self._settle()
            self.progress.phase("prefilling")
            return await self.cells.prefill(context, prompt)
        if over_capacity(context, concurrency, plan.max_output, plan.kv_capacity):
            return DecodeCell(context_tokens=context, concurrency=concurrency, status="Over capacity")
        self.progress.phase("building prompts")
        prompts = [await self.maker.make(context, slot) for slot in range(concurrency)]
        began = time.monotonic()
        ticker = asyncio.create_task(self._tick())
        try:
            cell = await self.cells.decode(context, prompts, plan.duration)
        finally:
            ticker.cancel()
        if cell.measured_s:
            self.window_overhead.append(time.monotonic() - began - cell.measured_s)
        return cell

    async def _settle(self) -> None:
        """Wait until the server runs nothing, so a cold request is timed alone."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            busy = await busy_requests(self.client)
            if busy is None:
                await asyncio.sleep(SETTLE_BLIND_S)
                return
            if busy == 0:
                return
            await asyncio.sleep(0.1)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            self.progress.live_tokens(self.cells.live_tokens)

    async def _check_alive(self, reason: str | None) -> None:
        """After a failed item, stop cleanly if the server no longer answers at all."""
        try:
            await wait_ready(self.client, min(10.0, self.options.ready_timeout))
        except ServerError:
            kept = len(measuring_order(self.plan)) - left_to_measure(self.journal)
            raise MeasureError(
                f"the server at {self.client.base_url} stopped answering ({reason}); {kept} finished "
                f"cells are kept in {self.journal.path}; rerun with --resume to finish the matrix") from None


def _refuse_to_overwrite(out: Path, replace: bool) -> None:
    """Stop before a new run meets a finished run's journal, or a bundle with none, at the same path."""
    path = journal_path(out)
    if path.exists() and not left_to_measure(Journal.load(path, lock=False)):
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
    """
    with raised_priority():
        return await _measure_run(options, simulated, progress)


async def _measure_run(options: Options, simulated: bool, progress: RunEvents | None) -> Path:
    """The run itself: probe, then a new journal or the resumed one, then every planned cell."""
    api_key = os.environ.get(options.api_key_env) or None
    client = Client(options.base_url, api_key, options.stall_timeout)
    journal: Journal | None = None
    try:
        facts = await probe_server(client, options.model, options.ready_timeout, options.kv_capacity,
                                    options.launch_command)
        facts.token_counts = await first_request(client, facts)
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
            header = build_header(options, facts, gpus, api_key, started, simulated)
            check_bundle_fields(header)
            out = options.out or DEFAULT_RUNS_DIR / f"{header.id}.json"
            _refuse_to_overwrite(out, options.replace)
            journal = Journal.create(journal_path(out), Header(bundle=header, plan=plan))
        progress = progress or reporter_for(sys.stderr)
        with reporting(progress):
            await Measurement(options, client, facts, journal, out, progress, api_key).run()
        return out
    except (ServerError, JournalError, OptionError, MeasureError) as exc:
        # Every message that leaves the runner passes here, so none can carry the key.
        raise MeasureError(redact(str(exc), [api_key] if api_key else [])) from None
    except OSError as exc:  # a full disk, an --out below a file or in /proc
        kept = f"; finished cells are kept in {journal.path}" if journal else ""
        raise MeasureError(redact(f"cannot write {exc.filename or 'the run'}: {exc.strerror or exc}{kept}",
                                  [api_key] if api_key else [])) from None
    finally:
        if journal:
            journal.close()
        await client.aclose()
