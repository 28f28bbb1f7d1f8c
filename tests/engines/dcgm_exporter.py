"""A DCGM exporter for tests: real HTTP on 127.0.0.1 serving dcgm-exporter's text, in which each GPU's
energy counter is a known ramp (base + watts × 1000 × seconds, in mJ, on time.perf_counter), with
the faults a real one shows: a counter reset, a GPU gone, silence, and a long collect interval."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# What follows each GPU's own labels, as dcgm-exporter writes them.
_HOST_LABELS = 'device="nvidia{index}",modelName="NVIDIA H200",Hostname="node-a",DCGM_FI_DRIVER_VERSION="570.86.15"'
# The longest a silenced request waits, so that no test can hang on one.
MAX_SILENCE_S = 30.0


@dataclass
class Ramp:
    """One GPU's counter: `base_mj` at `origin` (perf_counter seconds), rising at `watts` since."""

    uuid: str
    watts: float
    base_mj: float
    origin: float
    present: bool = True

    def energy_mj(self, at: float) -> float:
        """The counter at `at`, in whole millijoules as DCGM reports it."""
        return float(math.floor(self.base_mj + self.watts * 1000 * (at - self.origin)))


class DcgmExporter:
    """The exporter's state, which a test changes while it serves: each fault is a method."""

    def __init__(self, watts: list[float]) -> None:
        """One GPU per entry of `watts`, numbered from 0, with counters far from zero as after long uptime."""
        now = time.perf_counter()
        self.gpus = [Ramp(uuid=f"GPU-{index:08x}-5f1c-4d2e-9a7b-0123456789ab", watts=w, base_mj=4e9 + 1e8 * index,
                          origin=now) for index, w in enumerate(watts)]
        self.collect_interval_s = 0.0  # 0: every scrape collects afresh
        self._epoch = now
        self._speaking = threading.Event()
        self._speaking.set()
        self.url = ""

    def joules(self, start: float, end: float) -> float:
        """What the ramps say every GPU spent from `start` to `end` (perf_counter seconds), with no fault between."""
        return sum(gpu.watts * (end - start) for gpu in self.gpus)

    def reset(self, index: int) -> None:
        """GPU `index`'s counter starts again from zero now, as after a driver reload."""
        self.gpus[index].base_mj, self.gpus[index].origin = 0.0, time.perf_counter()

    def drop(self, index: int) -> None:
        """GPU `index` leaves the page (fallen off the bus, or the exporter lost it)."""
        self.gpus[index].present = False

    def restore(self, index: int) -> None:
        """GPU `index` is on the page again."""
        self.gpus[index].present = True

    def silence(self) -> None:
        """Every request waits, unanswered, until `speak` (or MAX_SILENCE_S)."""
        self._speaking.clear()

    def speak(self) -> None:
        """Answer again, the waiting requests first."""
        self._speaking.set()

    def _collected_at(self) -> float:
        """When the exporter last collected: now, or the last tick of its collect interval."""
        now = time.perf_counter()
        interval = self.collect_interval_s
        return now if not interval else self._epoch + (now - self._epoch) // interval * interval

    def page(self) -> str:
        """The exposition text a scrape gets now."""
        at = self._collected_at()
        shown = [(index, gpu) for index, gpu in enumerate(self.gpus) if gpu.present]

        def labels(index: int, gpu: Ramp) -> str:
            return f'gpu="{index}",UUID="{gpu.uuid}",pci_bus_id="00000000:{index + 10:02X}:00.0",' + _HOST_LABELS.format(index=index)

        lines = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
        lines += [f"DCGM_FI_DEV_GPU_TEMP{{{labels(index, gpu)}}} 61" for index, gpu in shown]
        lines += ["# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
        lines += [f"DCGM_FI_DEV_POWER_USAGE{{{labels(index, gpu)}}} {gpu.watts:.6f}" for index, gpu in shown]
        lines += ["# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).",
                  "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"]
        lines += [f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels(index, gpu)}}} {gpu.energy_mj(at):.0f}" for index, gpu in shown]
        return "\n".join(lines) + "\n"

    def answer(self) -> str | None:
        """The page once the exporter speaks; None when it stays silent past MAX_SILENCE_S."""
        return self.page() if self._speaking.wait(MAX_SILENCE_S) else None


def _handler(exporter: DcgmExporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path != "/metrics":
                self.send_error(404)
                return
            page = exporter.answer()
            if page is None:
                return
            body = page.encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the scraper gave up during a silence
                pass

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
            pass

    return Handler


@contextmanager
def running_exporter(watts: list[float]) -> Iterator[DcgmExporter]:
    """A DcgmExporter serving /metrics on 127.0.0.1 while the block runs; its `url` is set."""
    exporter = DcgmExporter(watts)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(exporter))
    server.daemon_threads = True
    exporter.url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield exporter
    finally:
        exporter.speak()
        server.shutdown()
        server.server_close()
        thread.join(5)
