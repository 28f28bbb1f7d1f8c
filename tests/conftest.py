"""Shared fixtures: the seed pages, a built site, a real HTTP server and Debian's chromium."""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SEEDS = sorted((FIXTURES / "seeds").glob("*.txt"))
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


# Figures the hostile-input tests report (inputs tried, strings rendered), printed after the run.
FIGURES: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures the tests collected, so CI's log shows how much was tried."""
    if FIGURES:
        terminalreporter.section("figures")
        for line in FIGURES:
            terminalreporter.write_line(line)


def normalize_page_text(text: str) -> str:
    """Page text for comparison: no whitespace, no markdown list or table punctuation, no label colons."""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"^\|?\s*:?-{3,}", stripped):
            continue
        kept.append(re.sub(r"^[-*]\s+", "", stripped))
    return re.sub(r"[\s|:]+", "", "".join(kept))


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built from the seeds, imported afresh (not the committed bundles)."""
    from sitegen.build import build_site
    from sitegen.import_files import import_files
    from sitegen.importers.options import ImportOptions

    content = tmp_path_factory.mktemp("content")
    shutil.copytree(ROOT / "content" / "pages", content / "pages")
    written, errors = import_files(SEEDS, content / "runs", ImportOptions())
    assert not errors and len(written) == len(SEEDS)
    out = tmp_path_factory.mktemp("built") / "site"
    build_site(content, out)
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def site_server(built_site: Path) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 serving the built site; yields its base URL."""
    yield from serve_folder(built_site)


def serve_folder(folder: Path) -> Iterator[str]:
    """Serve a folder over real HTTP on 127.0.0.1 until the generator is closed."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Debian chromium driven by Playwright; no browser download.

    Module-scoped: Playwright's sync API keeps an event loop running in this
    thread while it is open, which would break asyncio.run() in later tests.
    """
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium is not installed: apt-get install -y chromium (make test does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: object) -> Iterator[object]:
    """A fresh page that records console errors in `page.console_errors`."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    new_page = context.new_page()
    new_page.console_errors = []
    new_page.on("console", lambda msg: msg.type == "error" and new_page.console_errors.append(msg.text))
    new_page.on("pageerror", lambda exc: new_page.console_errors.append(str(exc)))
    yield new_page
    context.close()
