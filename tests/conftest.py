"""Fixtures for every folder: a site built from the seeds and Debian's chromium; the run's figures printed at the end.

Shared helpers that are not fixtures live in tests/builders.py."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import FIGURES, ROOT, SEEDS

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal gives it, for the children the tests interrupt: a test run started in the
    background of a script inherits SIGINT ignored, and an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures the tests collected, so CI's log shows how much was tried."""
    if FIGURES:
        terminalreporter.section("figures")
        for line in FIGURES:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built from the seeds, imported afresh (not the committed bundles)."""
    from sitegen.build import build_site
    from sitegen.importers.import_files import import_files
    from sitegen.importers.options import ImportOptions

    content = tmp_path_factory.mktemp("content")
    shutil.copytree(ROOT / "content" / "pages", content / "pages")
    written, errors = import_files(SEEDS, content / "runs", ImportOptions())
    assert not errors and len(written) == len(SEEDS)
    out = tmp_path_factory.mktemp("built") / "site"
    build_site(content, out)
    return out


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
