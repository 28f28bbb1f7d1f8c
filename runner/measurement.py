"""Measuring the planned matrix item by item: each prefill point after the server settles, each decode
cell with its window's records, every result journaled and the bundle rewritten after it."""

from __future__ import annotations

import asyncio
import secrets
import statistics
import time
from pathlib import Path

import msgspec

from runner.bundle.files import write_bundle
from runner.bundle.records import WindowRecord, append_window, records_path
from runner.bundle.redact import redact
from runner.bundle.schema import Bundle, DecodeCell, PrefillPoint, schema_problem
from runner.cell import CellRunner
from runner.client import Client
from runner.endpoints import MetricsEndpoints
from runner.energy import EnergyMeter
from runner.errors import MeasureError, RequestFailed, ServerError
from runner.fleet.server_process import ServerProcess
from runner.journal import Journal
from runner.metadata import CHUNK_COUNTING_NOTE
from runner.options import Options
from runner.plan import CELL_OVERHEAD_S, Item, estimate_seconds, measuring_order, over_capacity
from runner.progress import RunEvents, item_label
from runner.prompts import PromptMaker
from runner.server_facts import ServerFacts, busy_requests, wait_ready

# Before a cold prefill, wait up to SETTLE_S for streams the last cell cut off to drain from the
# server; without a running gauge to watch, until SETTLE_BLIND_S after the client last cut one off.
SETTLE_S = 10.0
SETTLE_BLIND_S = 1.0
# After a failed item, how long a launched server has to be seen exiting for the failure to be its death.
EXIT_SEEN_S = 2.0


TOKEN_COUNTS = {
    "usage": "the server's running usage in every chunk",
    "timings": "llama.cpp's running predicted_n in every chunk",
    "chunks": CHUNK_COUNTING_NOTE,
}


def journaled(journal: Journal, context: int, concurrency: int | None, repeat: int = 0) -> PrefillPoint | DecodeCell | None:
    """The journal's entry for one matrix item, or None."""
    if concurrency is None:
        return journal.points.get(context)
    return journal.decode_at(context, concurrency, repeat)


def publishable(item: PrefillPoint | DecodeCell) -> PrefillPoint | DecodeCell:
    """`item` as measured; or, where the schema would refuse one of its figures (the server's
    answers made no sense), the item Failed with the field named, so nothing invalid is journaled."""
    problem = schema_problem(item)
    if problem is None:
        return item
    where, what = problem
    error = f"the server's answers gave a figure the bundle cannot hold ({where.removeprefix('$.')}: {what})"
    if isinstance(item, PrefillPoint):
        return PrefillPoint(context_tokens=item.context_tokens, status="Failed", error=error)
    return DecodeCell(context_tokens=item.context_tokens, concurrency=item.concurrency, status="Failed", error=error)


def left_to_measure(journal: Journal) -> int:
    """How many items of the journal's plan are not finished yet."""
    return sum(1 for c, n, r in measuring_order(journal.header.plan) if not journal.finished(journaled(journal, c, n, r)))


class Measurement:
    """One run of the matrix against one server, journaled as it goes."""

    def __init__(self, options: Options, client: Client, facts: ServerFacts, journal: Journal,
                 out: Path, progress: RunEvents, secrets_known: list[str], server: ServerProcess | None = None,
                 energy: EnergyMeter | None = None) -> None:
        """Measure the journal's plan on the server behind `client`, writing the bundle to `out`."""
        self.options = options
        self.client = client
        self.facts = facts
        self.journal = journal
        self.plan = journal.header.plan
        self.out = out
        self.progress = progress
        self.secrets = secrets_known
        self.server = server
        self.maker = PromptMaker(client, facts.model, facts.engine, secrets.token_hex(4), facts.api)
        self.endpoints = MetricsEndpoints(client, options.metrics_urls)
        self.cells = CellRunner(client, self.maker, facts.model, self.plan.max_output, facts.ignore_eos,
                                self.endpoints.read if facts.queue_gauge else None, record_endpoints=self.endpoints.given,
                                energy=energy)
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
        write_bundle(self.out, self._bundle())
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
            self.cells.last_records = None
            try:
                item = await self._measure(context, concurrency)
            except RequestFailed as exc:  # building the prompts failed
                item = (PrefillPoint(context_tokens=context, status="Failed", error=str(exc)) if concurrency is None
                        else DecodeCell(context_tokens=context, concurrency=concurrency, status="Failed", error=str(exc)))
            if item.error:
                item.error = redact(item.error, self.secrets)
            item = publishable(item)
            died = self.server is not None and (
                self.server.exit_status is not None
                or (item.status == "Failed" and await self.server.exited_within(EXIT_SEEN_S)))
            if died and item.status == "Failed":
                item.error = f"the server {self.server.describe_exit()} during this measurement ({item.error})"
            if self.cells.last_records and item.status != "Failed":  # the kept window's requests
                window_us, records = self.cells.last_records
                window = WindowRecord(context=context, concurrency=item.concurrency, repeat=repeat, window_us=window_us)
                append_window(records_path(self.out), window, records)
            self.journal.record(item, repeat)
            write_bundle(self.out, self._bundle())
            if isinstance(item, PrefillPoint):
                self.progress.prefill_done(item)
            else:
                self.progress.cell_finished(item)
            if died:
                raise MeasureError(f"the server {self.server.describe_exit()} while measuring "
                                   f"{item_label(context, concurrency)}; {self._kept()}")
            if item.status == "Failed":
                await self._check_alive(item.error)
        return self._bundle()

    def _bundle(self) -> Bundle:
        """The bundle as of now, with what is known of a server the runner launched."""
        bundle = self.journal.bundle()
        return msgspec.structs.replace(bundle, launch=self.server.record()) if self.server else bundle

    def _kept(self) -> str:
        """Where the finished items are and how to finish the rest."""
        kept = len(measuring_order(self.plan)) - left_to_measure(self.journal)
        return f"{kept} finished items are kept in {self.journal.path}; rerun with --resume to finish the matrix"

    async def _measure(self, context: int, concurrency: int | None) -> PrefillPoint | DecodeCell:
        """One item: its prompts built, then the prefill point (once the server settles) or the decode cell."""
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
        """Wait until the server runs nothing, so a cold request is timed alone; without a gauge that
        says, give the streams this client cut off SETTLE_BLIND_S to drain (none cut off: no wait)."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            busy = await busy_requests(self.endpoints)
            if busy is None:
                cut_off = self.client.last_cut_off
                if cut_off is not None:
                    await asyncio.sleep(max(0.0, cut_off + SETTLE_BLIND_S - time.monotonic()))
                return
            if busy == 0:
                return
            await asyncio.sleep(0.1)

    async def _tick(self) -> None:
        """Report the running window's tokens to the progress view every half second."""
        while True:
            await asyncio.sleep(0.5)
            self.progress.live_tokens(self.cells.live_tokens)

    async def _check_alive(self, reason: str | None) -> None:
        """After a failed item, stop cleanly if the server no longer answers at all."""
        try:
            await wait_ready(self.client, min(10.0, self.options.ready_timeout))
        except ServerError:
            raise MeasureError(f"the server at {self.client.base_url} stopped answering ({reason}); {self._kept()}") from None
