"""Chromium on sites of 3, 1,000 and 10,000 runs (or any counts): run on demand (`python3 benchmarks/site_browser.py`), not a test.

Builds each site (the committed runs, then synthetic ones as benchmarks/site_build.py makes them)
with `python -m sitegen build` from `--code` (default: this checkout), serves it over loopback HTTP
and drives Debian's chromium headless through Playwright. It prints, per site, medians of
`--repeat` fresh page loads, the sites taking turns so that the machine's drift falls on each
alike: the index opened (navigation start to the load event), one sort
click until the rows are drawn and painted (the first click, which loads its order's first
screen, and a second), a run page opened, and the bytes of script a first visit to a run page
loads. Targets (docs/scale.md): the index opens within 1.5x the 3-run site's time and a sort
takes at most 2x (or 200 ms), at any count (`--runs 3 100000` for the largest). The machine is
shared: figures are noisy.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from site_build import ROOT, make_content

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

TIMEOUT_MS = 180_000  # an index that holds every run (as --code with an older checkout may build) opens slowly
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
# Click a sort button, then wait until the listing is drawn (it may first load its data) and painted.
SORT_CLICK = """async () => {
  const table = document.getElementById("runs-table");
  const button = table.querySelector("thead th[data-key=peak] button");
  const started = performance.now();
  button.click();
  await new Promise(done => { const check = () => table.getAttribute("aria-busy") === "true" ? setTimeout(check, 1) : done(); check(); });
  await new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)));
  return performance.now() - started;
}"""
LOAD_TIME = "() => { const t = performance.getEntriesByType('navigation')[0]; return t.loadEventEnd - t.startTime; }"
SCRIPT_BYTES = "() => performance.getEntriesByType('resource').filter(r => r.initiatorType === 'script').reduce((n, r) => n + r.encodedBodySize, 0)"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def build(code: Path, content: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-m", "sitegen", "build", "--content", str(content), "--out", str(out)], cwd=code, check=True, capture_output=True)


def visit(browser: Browser, url: str) -> Page:
    """A fresh context (empty cache) and page at `url`, loaded; the caller closes page.context."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url}: {response and response.status}"
    return page


def measure_once(browser: Browser, base: str, run_id: str, figures: dict[str, list[float]]) -> None:
    """One first visit to a run page, then one index open and two sort clicks, each in a fresh context."""
    page = visit(browser, base + f"runs/{run_id}/index.html")
    figures["run_open"].append(page.evaluate(LOAD_TIME))
    figures["run_script_kb"].append(page.evaluate(SCRIPT_BYTES) / 1024)
    page.context.close()
    page = visit(browser, base + "index.html")
    figures["open"].append(page.evaluate(LOAD_TIME))
    figures["sort"].append(page.evaluate(SORT_CLICK))
    figures["sort_again"].append(page.evaluate(SORT_CLICK))
    page.context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[3, 1000, 10000], help="site sizes (3: the committed runs)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose sitegen builds (default: this one)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    figures: dict[int, dict[str, list[float]]] = {}
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="site-browser-bench-") as tmp, sync_playwright() as playwright:
        sites = {}
        for runs in args.runs:
            work = Path(tmp) / str(runs)
            if runs == 3:
                shutil.copytree(ROOT / "content", work / "content")
            else:
                make_content(work / "content", runs, 20260903)
            build(args.code, work / "content", work / "site")
            run_id = sorted(p.name for p in (work / "site" / "runs").iterdir())[0]
            sites[runs] = (work / "site", run_id)
            figures[runs] = {"open": [], "sort": [], "sort_again": [], "run_open": [], "run_script_kb": []}
        servers = {runs: serve(site) for runs, (site, _) in sites.items()}
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS)
        try:
            # The sites take turns, a visit each per round, so that the machine's drift falls on all alike.
            for _ in range(args.repeat):
                for runs, (_, run_id) in sites.items():
                    measure_once(browser, servers[runs][1], run_id, figures[runs])
        finally:
            browser.close()
            for server, _ in servers.values():
                server.shutdown()
                server.server_close()
        for runs, (site, _) in sites.items():
            results[runs] = {name: statistics.median(values) for name, values in figures[runs].items()}
            results[runs]["index_kb"] = (site / "index.html").stat().st_size / 1024
            print(f"{runs:,} runs: open ms {sorted(round(v) for v in figures[runs]['open'])}", flush=True)
    print(f"chromium on built sites (code from {args.code}); medians of {args.repeat} fresh pages, the sites in turn, shared machine")
    print(f"{'runs':>8}{'index KB':>10}{'open ms':>10}{'sort ms':>10}{'again ms':>10}{'run page ms':>13}{'run page JS KB':>16}")
    for runs, r in results.items():
        print(f"{runs:>8,}{r['index_kb']:>10,.0f}{r['open']:>10.0f}{r['sort']:>10.0f}{r['sort_again']:>10.0f}{r['run_open']:>13.0f}{r['run_script_kb']:>16,.0f}")
    if 3 in results:
        small = results[3]
        for runs, r in results.items():
            if runs != 3:
                print(f"{runs:,} runs against 3: open {r['open'] / small['open']:.2f}x (target ≤ 1.5x), "
                      f"sort {r['sort'] / small['sort']:.2f}x (target ≤ 2x or ≤ 200 ms: {r['sort']:.0f} ms)")
    for name in ("plotly-basic.min.js",):
        bundle = args.code / "templates" / "static" / name
        if bundle.is_file():
            data = bundle.read_bytes()
            print(f"{name}: {len(data) / 1024:,.0f} KB, {len(gzip.compress(data, 9)) / 1024:,.0f} KB gzipped")


if __name__ == "__main__":
    main()
