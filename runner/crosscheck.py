"""Every decode window checked against the server's own accounting, and the verdict on it.

/metrics is read right before and right after the window (and now and then during it). The
change of the server's counters and histograms over the window is what the server itself
says happened: how many tokens it generated, its inter-token latency, TTFT and queue time.
`verdict` sets the client's figures beside those and the client's self-check (runner.selfcheck)
and says whether the cell can be published as measured, with the reason when not.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from runner import metrics
from runner.bundle.schema import ClientCheck, EndpointCheck, ServerCheck, SpeculativeCheck
from runner.client import Trace
from runner.endpoints import EndpointRead

# Tolerances (Methodology states them). The client's mean time between tokens against the
# server's mean inter-token latency: relative.
ITL_TOLERANCE = 0.02
# The published per-request tok/s (a median over requests) against the server's mean rate. A
# client read late at a stream's first or last token moves that stream's rate, not the pooled
# one; requests that really ran at different speeds are flagged too, and measured again.
PER_REQUEST_TOLERANCE = 0.02
# The client's output tokens against the server's generated-tokens counter over the window.
TOKENS_TOLERANCE = 0.01
# The client's mean TTFT above the server's: absolute ms plus a share of the server's.
TTFT_TOLERANCE_MS = 12.0
TTFT_TOLERANCE_SHARE = 0.05
# Client self-check limits: event-loop lag (99th percentile), CPU share of its one core,
# and how late the window may end. Where the server's histograms check the figures directly,
# lag only marks a stalled client; without them it is the only check, so the limit is tighter.
LAG_LIMIT_MS = 50.0
LAG_LIMIT_UNCHECKED_MS = 20.0
CPU_LIMIT = 0.9
OVERRUN_LIMIT_S, OVERRUN_LIMIT_SHARE = 0.25, 0.05
# A scrape slower than this answered from an unknown moment of its round trip: its gauges are set aside.
STALE_SCRAPE_S = 0.5
# Queue evidence: a request waited this long before running, in this share of the window's requests.
QUEUE_WAIT_S = 0.1
QUEUED_SHARE = 0.25
# Without evidence from the server, average active requests under this share of those sent means a queue.
ACTIVE_FRACTION = 0.8


class Scrape(msgspec.Struct, kw_only=True):
    """One read of /metrics (every endpoint of it) and when it was asked for and answered (perf_counter seconds)."""

    samples: list[metrics.Sample]
    sent: float
    received: float
    reads: list[EndpointRead] = []

    @property
    def round_trip(self) -> float:
        """Seconds the scrape took."""
        return self.received - self.sent


Scraper = Callable[[], Awaitable[tuple[list[metrics.Sample], list[EndpointRead]]]]


async def timed_scrape(scraper: Scraper) -> Scrape:
    """Scrape once, time-stamped on both sides."""
    sent = time.perf_counter()
    samples, reads = await scraper()
    return Scrape(samples=samples, sent=sent, received=time.perf_counter(), reads=reads)


def endpoint_checks(scrapes: Sequence[Scrape]) -> list[EndpointCheck]:
    """How each endpoint's scrapes of the window went: how many, how many failed, the slowest."""
    found: dict[str, list[EndpointRead]] = {}
    for scrape in scrapes:
        for read in scrape.reads:
            found.setdefault(read.url, []).append(read)
    return [EndpointCheck(url=url, scrapes=len(reads), failed=sum(not r.ok for r in reads),
                          scrape_max_ms=max(r.ms for r in reads)) for url, reads in found.items()]


def ms(seconds: float | None) -> float | None:
    """Seconds as milliseconds, None kept."""
    return None if seconds is None else seconds * 1000


def evidence_problem(before: Scrape, after: Scrape, during: Sequence[Scrape]) -> str | None:
    """Why the server's metrics cannot account for the window, in one line; None when they can.

    A value that is not a finite number of at least zero, or a counter or histogram series that
    went backwards between the scrapes before and after (the server restarted, or replicas behind
    a load balancer answered the two scrapes), is no evidence: the cell it came from is Distorted.
    """
    for when, scrape in (("before", before), ("after", after)):
        dead = [read.url for read in scrape.reads if not read.ok]
        if dead and (len(scrape.reads) > 1 or before.samples or after.samples):
            return f"the server's metrics at {dead[0]} did not answer {when} the window, so the window is not fully accounted for"
    for scrape in (before, *during, after):
        for sample in scrape.samples:
            if not math.isfinite(sample.value) or sample.value < 0:
                return f"the server's /metrics gave {sample.name} = {sample.value!r}, not a count"
    earlier = {_series(s): s.value for s in before.samples if _cumulative(s.name)}
    for sample in after.samples:
        key = _series(sample)
        if key in earlier and sample.value < earlier[key]:
            return (f"the server's {sample.name} went backwards during the window ({earlier[key]:g} to "
                    f"{sample.value:g}): a restart, or several servers answering one address")
    return None


def _series(sample: metrics.Sample) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A sample's series: its name and label set."""
    return sample.name, tuple(sorted(sample.labels.items()))


def _cumulative(name: str) -> bool:
    """Whether a sample name is a counter or a histogram's series, which only ever grow."""
    return name.endswith(("_total", "_bucket", "_sum", "_count"))


def server_check(before: Scrape, after: Scrape, during: Sequence[Scrape], duration: float) -> ServerCheck | None:
    """What the server's metrics say about the `duration`-second window between `before` and `after`; None if nothing."""
    row = metrics.engine_metrics(after.samples)
    if row is None:
        return None

    def change(name: str | None) -> metrics.Histogram | None:
        late = metrics.histogram(after.samples, name)
        return None if late is None else late.minus(metrics.histogram(before.samples, name))

    ttft, itl, queue = change(row.ttft_seconds), change(row.itl_seconds), change(row.queue_seconds)
    fresh = [s for s in during if s.round_trip <= STALE_SCRAPE_S]
    waiting = [v for v in (metrics.counter(s.samples, row.waiting) for s in fresh) if v is not None]
    running = [v for v in (metrics.counter(s.samples, row.running) for s in fresh) if v is not None]
    # A slow scrape still read its gauges at some moment inside the window: good for "ever".
    ever_waiting = [v for v in (metrics.counter(s.samples, row.waiting) for s in during) if v is not None]
    ever_running = [v for v in (metrics.counter(s.samples, row.running) for s in during) if v is not None]
    trips = [s.round_trip for s in (before, after, *during)]
    if row.itl_counts_tokens:
        tokens = int(ttft.count + itl.count) if ttft and itl else None
        later_tokens = itl.count if itl else None
    else:
        generated = [metrics.counter(s.samples, row.generated_tokens) for s in (before, after)]
        tokens = int(generated[1] - generated[0]) if None not in generated else None
        later_tokens = tokens - ttft.count if tokens is not None and ttft else None
    return ServerCheck(
        metrics=row.engine,
        generated_tokens=tokens,
        requests=int(ttft.count) if ttft else None,
        ttft_mean_ms=ms(ttft.mean) if ttft else None,
        ttft_median_ms=ms(ttft.quantile(0.5)) if ttft else None,
        itl_mean_ms=ms(itl.mean) if itl else None,
        itl_median_ms=ms(itl.quantile(0.5)) if itl else None,
        itl_per_token_ms=ms(itl.sum / later_tokens) if itl and later_tokens and later_tokens > 0 else None,
        queue_mean_ms=ms(queue.mean) if queue else None,
        queued_share=queue.share_above(QUEUE_WAIT_S) if queue and queue.count else None,
        waiting_max=max(ever_waiting) if ever_waiting else None,
        running_max=max(ever_running) if ever_running else None,
        waiting_share=sum(v > 0 for v in waiting) / len(waiting) if waiting else None,
        waiting_seen=sum(v > 0 for v in waiting),
        running_mean=statistics.fmean(running) if running else None,
        scrapes=len(trips), stale_scrapes=len(during) - len(fresh), scrape_max_ms=max(trips) * 1000,
        active_mean=itl.sum / duration if itl and duration > 0 else None,
        first_token_waited_share=ttft.share_above(QUEUE_WAIT_S) if ttft and ttft.count else None,
    )


def speculative_check(before: Scrape, after: Scrape, during: Sequence[Scrape]) -> SpeculativeCheck | None:
    """Speculative decoding over the window from the server's own account; None where it has none.

    vLLM's counters give exact changes over the window; SGLang's gauges are running means, so
    the window's figure is their mean over the scrapes taken in it (and the one after it).
    """
    row = metrics.engine_metrics(after.samples)
    if row is None:
        return None
    if row.spec_drafts and metrics.counter(after.samples, row.spec_drafts) is not None:
        def change(name: str | None) -> int:
            return int((metrics.counter(after.samples, name) or 0) - (metrics.counter(before.samples, name) or 0))

        drafts, drafted, accepted = change(row.spec_drafts), change(row.spec_draft_tokens), change(row.spec_accepted)
        early = metrics.by_label(before.samples, row.spec_accepted_per_position, "position")
        late = metrics.by_label(after.samples, row.spec_accepted_per_position, "position")
        positions = sorted(late, key=lambda p: int(p) if p.isdigit() else 0)
        return SpeculativeCheck(
            source="server counters", drafts=drafts, draft_tokens=drafted, accepted_tokens=accepted,
            acceptance_rate=accepted / drafted if drafted else None,
            mean_acceptance_length=1 + accepted / drafts if drafts else None,
            per_position=[(late[p] - early.get(p, 0.0)) / drafts for p in positions] if drafts and positions else None,
        )
    gauges = [metrics.counter(s.samples, row.spec_accept_length_gauge) for s in (*during, after)]
    lengths = [g for g in gauges if g]
    if not lengths:
        return None
    rates = [r for r in (metrics.counter(s.samples, row.spec_accept_rate_gauge) for s in (*during, after)) if r]
    return SpeculativeCheck(source="server gauges (running means)", mean_acceptance_length=statistics.fmean(lengths),
                            acceptance_rate=statistics.fmean(rates) if rates else None)


class ClientTimes(msgspec.Struct, kw_only=True):
    """The client's own means over a window, on the same footing as the server's histograms."""

    ttft_mean_ms: float | None
    itl_mean_ms: float | None


def client_times(traces: Sequence[Trace], end: float) -> ClientTimes:
    """Mean TTFT and token-weighted mean time between tokens of the streams seen by `end`."""
    ttfts, span, gaps = [], 0.0, 0
    for trace in traces:
        seen = sum(1 for t in trace.times if t <= end)
        if not seen:
            continue
        ttfts.append(trace.times[0] - trace.start)
        count = sum(trace.counts[:seen])
        if count > 1:
            span += trace.times[seen - 1] - trace.times[0]
            gaps += count - 1
    return ClientTimes(ttft_mean_ms=statistics.fmean(ttfts) * 1000 if ttfts else None,
                       itl_mean_ms=span / gaps * 1000 if gaps else None)


def distortion(times: ClientTimes, server: ServerCheck | None, client: ClientCheck, duration: float,
               output_tokens: int | None = None, per_request_tok_s: float | None = None) -> str | None:
    """Why the window's figures cannot be trusted, in one line; None when they can."""
    reasons = []
    if server is not None and server.generated_tokens and output_tokens is not None:
        off = output_tokens / server.generated_tokens - 1
        if abs(off) > TOKENS_TOLERANCE:
            reasons.append(f"the client counted {output_tokens:,} tokens, the server generated "
                           f"{server.generated_tokens:,} ({off:+.1%})")
    if server is not None and server.itl_per_token_ms and times.itl_mean_ms is not None:
        off = times.itl_mean_ms / server.itl_per_token_ms - 1
        if abs(off) > ITL_TOLERANCE:
            burst = f", {client.burst_share:.0%} of tokens arrived in bursts" if client.burst_share else ""
            reasons.append(f"time between tokens {times.itl_mean_ms:.3g} ms against the server's "
                           f"{server.itl_per_token_ms:.3g} ms ({off:+.1%}{burst})")
    if server is not None and server.itl_per_token_ms and per_request_tok_s is not None:
        rate = 1000 / server.itl_per_token_ms
        off = per_request_tok_s / rate - 1
        if abs(off) > PER_REQUEST_TOLERANCE:
            reasons.append(f"{per_request_tok_s:,.1f} tok/s per request against the {rate:,.1f} the server's "
                           f"inter-token latency gives ({off:+.1%})")
    if server is not None and server.ttft_mean_ms is not None and times.ttft_mean_ms is not None:
        allowed = TTFT_TOLERANCE_MS + TTFT_TOLERANCE_SHARE * server.ttft_mean_ms
        if times.ttft_mean_ms - server.ttft_mean_ms > allowed:
            reasons.append(f"TTFT {times.ttft_mean_ms:.1f} ms against the server's {server.ttft_mean_ms:.1f} ms")
    checked = server is not None and server.itl_per_token_ms is not None and server.ttft_mean_ms is not None
    lag_limit = LAG_LIMIT_MS if checked else LAG_LIMIT_UNCHECKED_MS
    if client.loop_lag_p99_ms is not None and client.loop_lag_p99_ms > lag_limit:
        reasons.append(f"the client's event loop lagged {client.loop_lag_p99_ms:.0f} ms (99th percentile)")
    if client.cpu_share is not None and client.cpu_share > CPU_LIMIT:
        reasons.append(f"the client used {client.cpu_share:.0%} of its core")
    if client.overrun_ms is not None and client.overrun_ms / 1000 > max(OVERRUN_LIMIT_S, OVERRUN_LIMIT_SHARE * duration):
        reasons.append(f"the window ended {client.overrun_ms / 1000:.2f} s late")
    return "; ".join(reasons) or None


def server_queued(server: ServerCheck | None, concurrency: int) -> bool:
    """Did the server say requests waited during the window, whatever the client saw?

    Any one of three signs is enough. Its queue-time histogram: QUEUED_SHARE of the window's
    finished requests waited QUEUE_WAIT_S or more before running. Its waiting gauge, in the
    scrapes that answered promptly: above zero in two of them and in QUEUED_SHARE of them (brief
    blips are the scheduler admitting replacements). Or its histograms together: it had under
    ACTIVE_FRACTION of the N requests generating on average (summed inter-token latency over the
    window) while QUEUED_SHARE of the window's first tokens came QUEUE_WAIT_S or more after
    their request arrived. Engines observe queue time only when a request finishes, so in a
    short window on a slow server the requests that waited may not have finished; they did get
    their first token, late, and the running seats stayed short of N. A client that fails to
    keep N requests open lowers the first figure but not the second: its requests are served
    as soon as they arrive.
    """
    if server is None:
        return False
    if server.queued_share is not None and server.queued_share >= QUEUED_SHARE:
        return True
    if server.waiting_share is not None and server.waiting_share >= QUEUED_SHARE and server.waiting_seen >= 2:
        return True
    active, waited = server.active_mean, server.first_token_waited_share
    return (isinstance(active, (int, float)) and isinstance(waited, (int, float))
            and active < ACTIVE_FRACTION * concurrency and waited >= QUEUED_SHARE)


def status(server: ServerCheck | None, reason: str | None, avg_active: float, concurrency: int) -> str:
    """The cell's status from the queue signs and the distortion verdict, in this order.

    1. A queue the server reports (server_queued) wins, distorted or not: the reason is recorded
       beside it all the same.
    2. Average active requests under ACTIVE_FRACTION of those sent, which no stale gauge can hide,
       is a queue where the server's waiting gauge (read at any moment of the window, however
       slowly) saw a request waiting.
    3. Otherwise a distorted window is Distorted, since bursty delivery also shortens the
       client's view of how long streams were active;
    4. and an undistorted one with too few active requests is queued; else Valid.
    """
    short = avg_active < ACTIVE_FRACTION * concurrency
    if server_queued(server, concurrency):
        return "Requests queued"
    if short and (server is None or (server.waiting_max or 0) > 0):
        return "Requests queued"
    if reason:
        return "Distorted"
    return "Requests queued" if short else "Valid"
