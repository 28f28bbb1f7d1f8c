"""`sitegen serve` over real HTTP: edits are rebuilt and served, a bad bundle keeps the old site."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from sitegen.cli import main
from sitegen.serve import Server, watched

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = "ling-3-0-flash-fp4-h200-nvl-x2-2026-09-03"
RUN_PAGE = f"runs/{RUN_ID}/index.html"
WAIT_SECONDS = 15.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll condition until true, failing after WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {WAIT_SECONDS:.0f} s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture()
def content(tmp_path: Path) -> Path:
    """A private copy of the committed content folder."""
    folder = tmp_path / "content"
    shutil.copytree(ROOT / "content", folder)
    return folder


@pytest.fixture()
def server(content: Path, tmp_path: Path) -> Iterator[Server]:
    """A running Server on a free port; stopped and joined afterwards."""
    running = Server(content, tmp_path / "site", port=0)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()


def get(server: Server, path: str) -> httpx.Response:
    return httpx.get(server.url + path, timeout=5)


def test_serves_and_rebuilds_on_change_keeping_the_old_site_on_bad_input(
    server: Server, content: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert server.url.startswith("http://127.0.0.1:") and not server.url.endswith(":0/")
    first = get(server, RUN_PAGE)
    assert first.status_code == 200
    assert first.headers["cache-control"] == "no-store"
    assert "Ling-3.0-flash-fp4 on H200 NVL" in first.text

    bundle_path = content / "runs" / f"{RUN_ID}.json"
    bundle = json.loads(bundle_path.read_text())
    bundle["model"] = "Ling-3.0-flash-fp4-edited"
    bundle_path.write_text(json.dumps(bundle))
    wait_for(lambda: "Ling-3.0-flash-fp4-edited on H200 NVL" in get(server, RUN_PAGE).text, "the edited title to be served")

    output = [capsys.readouterr().err]
    bundle["decode"][3]["status"] = "Quick"
    bundle["model"] = "never served"
    bundle_path.write_text(json.dumps(bundle))

    def failed() -> bool:
        output.append(capsys.readouterr().err)
        return "build failed" in "".join(output)

    wait_for(failed, "the bad bundle's build to fail")
    assert f"runs/{RUN_ID}.json:$.decode[3].status: Invalid enum value 'Quick'" in "".join(output)
    kept = get(server, RUN_PAGE)
    assert kept.status_code == 200
    assert "Ling-3.0-flash-fp4-edited on H200 NVL" in kept.text
    assert "never served" not in kept.text


def test_stop_closes_the_port(content: Path, tmp_path: Path) -> None:
    running = Server(content, tmp_path / "site", port=0)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    assert get(running, "").status_code == 200
    running.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        get(running, "")


def test_the_watcher_ignores_hidden_files_backups_and_the_output_folder(tmp_path: Path) -> None:
    content, templates = tmp_path / "content", tmp_path / "templates"
    folders = [content, templates]
    assert watched(str(content / "runs" / "a.json"), folders, content / "site")
    assert watched(str(templates / "run.html"), folders, content / "site")
    assert not watched(str(content / "runs" / ".a.json.swp"), folders, content / "site")
    assert not watched(str(content / "runs" / "a.json~"), folders, content / "site")
    assert not watched(str(content / ".git" / "index"), folders, content / "site")
    assert not watched(str(content / "site" / "index.html"), folders, content / "site")
    assert not watched(str(content / ".site-build-x1" / "index.html"), folders, content / "site")
    # A hidden folder above a watched one hides nothing inside it.
    hidden_home = tmp_path / ".home" / "content"
    assert watched(str(hidden_home / "runs" / "a.json"), [hidden_home], None)


def test_a_hidden_or_backup_file_starts_no_build_but_a_page_does(server: Server, content: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (content / "runs" / ".notes.swp").write_text("x")
    (content / "runs" / "notes~").write_text("x")
    time.sleep(1.0)  # a build they started would begin now, and be counted below
    (content / "pages").mkdir(exist_ok=True)
    (content / "pages" / "zz-extra.md").write_text("# Extra\n\nA page added while serving.\n")
    wait_for(lambda: get(server, "zz-extra/index.html").status_code == 200, "the added page to be served")
    assert capsys.readouterr().out.count("built ") == 1


def sitegen_serve(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """`sitegen serve` as a user runs it, in its own process."""
    return subprocess.Popen([sys.executable, "-m", "sitegen.cli", "serve", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_busy_port_is_one_line_and_nothing_is_built(content: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = sitegen_serve("--content", str(content), "--out", "site", "--port", str(port), cwd=tmp_path)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode != 0
    assert (stdout, stderr) == ("", f"error: port {port} on 127.0.0.1 is in use; pass --port\n")
    assert not (tmp_path / "site").exists()


def test_a_content_folder_without_runs_stops_serve_with_one_line(tmp_path: Path) -> None:
    process = sitegen_serve("--content", "contnet", "--port", "0", cwd=tmp_path)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode != 0
    assert (stdout, stderr) == ("", "error: contnet/runs: no such folder (--content should be the folder holding runs/ and pages/)\n")


def test_serve_names_the_output_folder_as_given(content: Path, tmp_path: Path) -> None:
    process = sitegen_serve("--content", "content", "--out", "site", "--port", "0", cwd=tmp_path)
    try:
        built, serving = process.stdout.readline(), process.stdout.readline()
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert built.startswith("built ") and " into site/ in " in built, built
    assert serving.startswith("serving site/ at http://127.0.0.1:"), serving


def test_serve_leaves_port_8000_to_inference_servers() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0 and "[default: 8080;" in result.output
