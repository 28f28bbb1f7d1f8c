"""What a run page shows, outside #matrix, of how its server was deployed and of its speculative decoding
and energy readings: one view, as display strings, for the HTML page, index.txt and the comparisons.

Every part is there only where the bundle records it, so a run without these facts shows none of them.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

from runner.bundle import formats as f
from runner.bundle.schema import Bundle, DecodeCell, EndpointCheck, EnergyCheck, SpeculativeCheck, Topology
from sitegen.figures.serving import given, tok_s_per_kw, valid_energy
from sitegen.views.figure_formats import joules, share, significant, watts
from sitegen.views.runview import Field, sorted_decode

R = TypeVar("R")
INVALID = "Invalid"
API_WORDS = {
    "completions": "Completions (/v1/completions)",
    "chat": "Chat completions (/v1/chat/completions), through the server's chat template",
}


class ServingText(msgspec.Struct, frozen=True, kw_only=True):
    """The fixed words of the panels: the templates get them as the Jinja global `serving_text`, index.txt
    writes the same, and the page importer stops a text page's table at the headings."""

    served_heading: str
    speculative_heading: str
    speculative_caption: str
    speculative_header: tuple[str, ...]
    energy_heading: str
    energy_caption: str
    energy_header: tuple[str, ...]
    endpoints_heading: str
    endpoints_caption: str
    source: str  # the start of the line naming where a table's readings came from

    @property
    def headings(self) -> tuple[str, ...]:
        """The panels' headings, in page order."""
        return (self.served_heading, self.speculative_heading, self.energy_heading, self.endpoints_heading)


SERVING_TEXT = ServingText(
    served_heading="How it was served",
    speculative_heading="Speculative decoding",
    speculative_caption=(
        "Per decode cell, as the server accounts for it: acceptance rate = accepted ÷ drafted tokens; mean acceptance "
        "length = 1 + accepted ÷ drafts, the tokens one pass of the target model yields; by draft position, the share "
        "of drafts whose token there was accepted. From counters, the figures are the exact change over the window; "
        "where the engine keeps only running means, they are the means' average over the window's scrapes, and no "
        "drafts are counted."),
    speculative_header=("Context", "Requests at once", "Acceptance rate", "Mean acceptance length",
                        "Accepted by draft position 1, 2, … (%)", "Drafts"),
    energy_heading="Energy",
    energy_caption=(
        "Per decode cell: each GPU's energy counter read at the start and the end of the window, its power sampled "
        "in between. J per token counts prompt and output tokens; tok/s per kW = total tok/s ÷ (W per GPU × GPUs ÷ "
        "1,000). A reading the runner could not trust is marked invalid, with its reason, and gives no figures."),
    energy_header=("Context", "Requests at once", "J per output token", "J per token", "W per GPU", "tok/s per kW", "GPUs"),
    endpoints_heading="Metrics endpoints that missed scrapes",
    endpoints_caption=(
        "These cells were read through several /metrics endpoints, and at least one of them did not answer every "
        "scrape: the server's side of the cell rests on fewer readings."),
    source="Readings from",
)


class SpeculativeRow(msgspec.Struct, frozen=True):
    """One decode cell's speculative decoding figures (SPECULATIVE_HEADER's columns)."""

    context: str
    concurrency: str
    rate: str
    length: str
    positions: str  # the acceptance rates by draft position, in %: "81.2 · 62.0 · 45.1"
    drafts: str

    @property
    def texts(self) -> list[str]:
        return [self.context, self.concurrency, self.rate, self.length, self.positions, self.drafts]


class EnergyRow(msgspec.Struct, frozen=True):
    """One decode cell's energy figures (ENERGY_HEADER's columns), or, for an invalid reading, why not."""

    context: str
    concurrency: str
    figures: list[str]  # J per output token, J per token, W per GPU, tok/s per kW, GPUs; empty when invalid
    invalid: str | None = None  # "Invalid: <the runner's reason>"

    @property
    def texts(self) -> list[str]:
        return [self.context, self.concurrency, *(self.figures or [self.invalid or ""])]


class CellTable(msgspec.Struct, Generic[R], frozen=True):
    """A panel's rows, one per decode cell that has the reading, and where the readings came from."""

    rows: list[R]
    sources: str


class EndpointCell(msgspec.Struct, frozen=True):
    """A decode cell read through several /metrics endpoints, one of which missed scrapes: a line per endpoint."""

    cell: str
    lines: list[str]


class ServingView(msgspec.Struct, frozen=True):
    """The served facts (setup, then how the runner launched the server), the speculative decoding and energy
    tables, and the cells whose metrics endpoints missed scrapes."""

    served: list[Field]
    speculative: CellTable[SpeculativeRow] | None
    energy: CellTable[EnergyRow] | None
    endpoints: list[EndpointCell]


def parallelism(topology: Topology) -> str | None:
    """"TP 4 × PP 2 × DP 2, EP 8": the parallel sizes the run records."""
    grid = " × ".join(f"{name} {size}" for name, size in (("TP", topology.tensor_parallel), ("PP", topology.pipeline_parallel),
                                                          ("DP", topology.data_parallel)) if size)
    expert = f"EP {topology.expert_parallel}" if topology.expert_parallel else ""
    return ", ".join(part for part in (grid, expert) if part) or None


def speculative_setting(bundle: Bundle) -> str | None:
    """"eagle3, 3 draft tokens": the method and draft length from the launch command."""
    method, tokens = given(bundle.engine.speculative_method), given(bundle.engine.speculative_tokens)
    drafted = f"{tokens} draft token{'' if tokens == 1 else 's'}" if tokens else None
    return ", ".join(part for part in (method, drafted) if part) or None


def setup_fields(bundle: Bundle) -> list[Field]:
    """How the server was deployed: API, topology, speculative decoding. A comparison lists those that differ."""
    topology = given(bundle.topology)
    api = given(bundle.run.api)
    pairs: list[tuple[str, str | None]] = [("API", API_WORDS.get(api, api) if api else None)]
    if topology is not None:
        pairs += [
            ("Nodes", f.count(topology.nodes) if topology.nodes else None),
            ("Parallelism", parallelism(topology)),
            ("Prefill GPUs", f.count(topology.prefill_gpus) if topology.prefill_gpus else None),
            ("Decode GPUs", f"{f.count(topology.decode_gpus)} (tok/s per GPU is per decode GPU)" if topology.decode_gpus else None),
        ]
    pairs.append(("Speculative decoding", speculative_setting(bundle)))
    return [Field(label, value) for label, value in pairs if value]


def launch_fields(bundle: Bundle) -> list[Field]:
    """How the runner started and stopped the server, where it did: ready time, end, batch job, log."""
    launch = given(bundle.launch)
    if launch is None:
        return []
    job = " ".join(part for part in (launch.scheduler, launch.job_id and f"job {launch.job_id}", launch.node and f"on {launch.node}") if part)
    pairs = [
        ("Server ready after", f.seconds_tenth(launch.ready_s) if launch.ready_s is not None else None),
        ("Server ended", launch.ended),
        ("Batch job", job),
        ("Server log", launch.log),
    ]
    return [Field(label, value) for label, value in pairs if value]


def _sources(checks: list[SpeculativeCheck] | list[EnergyCheck]) -> str:
    """The readings' sources, each once, in cell order."""
    return ", ".join(dict.fromkeys(check.source for check in checks))


def speculative_row(cell: DecodeCell) -> SpeculativeRow:
    """A cell's speculative decoding figures as display strings."""
    check = cell.speculative
    positions = " · ".join(f.one_decimal(rate * 100) for rate in check.per_position) if check.per_position else f.EMPTY
    return SpeculativeRow(f.context_label(cell.context_tokens), f.count(cell.concurrency), share(check.acceptance_rate),
                          significant(check.mean_acceptance_length), positions, f.count(check.drafts))


def speculative_table(cells: list[DecodeCell]) -> CellTable[SpeculativeRow] | None:
    """A row per decode cell with speculative decoding figures; None when no cell has them."""
    found = [c for c in cells if given(c.speculative) is not None]
    return CellTable([speculative_row(c) for c in found], _sources([c.speculative for c in found])) if found else None


def energy_row(cell: DecodeCell) -> EnergyRow:
    """A cell's energy figures as display strings; an invalid reading's reason instead of figures."""
    label, at_once = f.context_label(cell.context_tokens), f.count(cell.concurrency)
    energy = valid_energy(cell)
    if energy is None:
        return EnergyRow(label, at_once, [], f"{INVALID}: {cell.energy.invalid_reason or 'no reason recorded'}")
    return EnergyRow(label, at_once, [joules(energy.joules_per_output_token), joules(energy.joules_per_token),
                                      watts(energy.mean_watts_per_gpu), f.tok_s(tok_s_per_kw(cell)), f.count(energy.gpus)])


def energy_table(cells: list[DecodeCell]) -> CellTable[EnergyRow] | None:
    """A row per decode cell with an energy reading, valid or not; None when no cell has one."""
    found = [c for c in cells if given(c.energy) is not None]
    return CellTable([energy_row(c) for c in found], _sources([c.energy for c in found])) if found else None


def endpoint_line(endpoint: EndpointCheck) -> str:
    """"http://10.0.0.2:8000/metrics: 3 of 40 scrapes failed, slowest 212 ms"."""
    failed = f"{f.count(endpoint.failed)} of {f.count(endpoint.scrapes)} scrapes failed" if endpoint.failed else f"{f.count(endpoint.scrapes)} scrapes"
    slowest = f", slowest {f.ms_whole(endpoint.scrape_max_ms)}" if endpoint.scrape_max_ms is not None else ""
    return f"{endpoint.url}: {failed}{slowest}"


def endpoint_cells(cells: list[DecodeCell]) -> list[EndpointCell]:
    """The cells read through several /metrics endpoints of which one or more missed scrapes, each endpoint on a line."""
    found = []
    for cell in cells:
        server = given(cell.server)
        endpoints = given(server.endpoints) if server is not None else None
        if endpoints and any(e.failed for e in endpoints):
            found.append(EndpointCell(f.cell_label(cell.context_tokens, cell.concurrency), [endpoint_line(e) for e in endpoints]))
    return found


def serving_view(bundle: Bundle) -> ServingView:
    """Everything the run page shows of the deployment and its readings, outside #matrix."""
    cells = sorted_decode(bundle)
    return ServingView(setup_fields(bundle) + launch_fields(bundle), speculative_table(cells), energy_table(cells), endpoint_cells(cells))
