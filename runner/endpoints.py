"""Where a server's /metrics are: one page per replica or worker, read together as one account.

A data-parallel deployment, a multi-node server or a disaggregated prefill/decode pair has one
/metrics per replica or worker (`--metrics-url`, repeatable). Each scrape reads them all at once;
their samples are combined with an `endpoint` label added, so counters and histograms sum across
them and the gauges add up, while each series stays distinct for the checks that compare a
series with itself. Every endpoint's read is kept, so one slow or dead endpoint is visible in
the cell rather than silently dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import msgspec

from runner import metrics
from runner.bundle.redact import redact
from runner.client import Client
from runner.errors import RequestFailed

ENDPOINT_LABEL = "endpoint"


class EndpointRead(msgspec.Struct, frozen=True):
    """One endpoint's part of one scrape: whether it answered, and how long it took."""

    url: str
    ok: bool
    ms: float


class MetricsEndpoints:
    """The /metrics pages of one server: the given URLs, or the server's own /metrics."""

    def __init__(self, client: Client, urls: Sequence[str] = ()) -> None:
        """Read `urls` through `client` (the key goes only to the server's own origin)."""
        self.client = client
        self.given = bool(urls)
        self.urls = list(urls) or [client.root + "/metrics"]
        self.shown = [redact(url) for url in self.urls]

    async def read(self) -> tuple[list[metrics.Sample], list[EndpointRead]]:
        """Every endpoint at once: the combined samples, and each endpoint's read."""
        answers = await asyncio.gather(*(self._one(url) for url in self.urls))
        samples: list[metrics.Sample] = []
        reads = []
        for index, (found, read) in enumerate(answers):
            reads.append(read)
            if len(self.urls) == 1:
                samples = found
            else:
                samples += [metrics.Sample(s.name, {**s.labels, ENDPOINT_LABEL: str(index)}, s.value) for s in found]
        return samples, reads

    async def samples(self) -> list[metrics.Sample]:
        """The combined samples alone (for the probe and the settle wait)."""
        return (await self.read())[0]

    async def _one(self, url: str) -> tuple[list[metrics.Sample], EndpointRead]:
        started = time.perf_counter()
        try:
            response = await self.client.get_url(url)
            ok = response.status_code == 200
            found = metrics.parse_prometheus(response.text) if ok else []
        except RequestFailed:
            ok, found = False, []
        shown = self.shown[self.urls.index(url)]
        return found, EndpointRead(url=shown, ok=ok, ms=(time.perf_counter() - started) * 1000)
