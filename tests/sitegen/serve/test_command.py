"""`sitegen serve` over real HTTP: edits are rebuilt and served, a bad bundle keeps the old site."""

from __future__ import annotations

import json
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
from sitegen.serve.command import Server, watched
from sitegen.serve.http_server import MAX_CONNECTIONS, REQUEST_S
from tests.sample_site import LING, write_content

RUN_ID = LING
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
    """The sample content folder."""
    return write_content(tmp_path)


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


def test_hidden_paths_and_folder_listings_are_not_served_even_when_there(server: Server) -> None:
    """What a site built by an earlier sitegen held (its manifest and cache), or anything hidden put in
    the folder since, is no part of the site: 404 however the path is spelled."""
    (server.out / ".build-runs").mkdir()
    (server.out / ".build-runs" / "runs-1").write_bytes(b"cache")
    (server.out / ".build-manifest").write_bytes(b"manifest")
    (server.out / "static" / ".secret").write_text("secret")
    for path in (".build-runs/", ".build-runs/runs-1", ".build-manifest", "%2Ebuild-manifest", "%2ebuild-runs/runs-1",
                 "static/.secret", "static/%2esecret", "runs/../.build-manifest", "./.build-manifest",
                 ".build-manifest?x=1", "data/", "static/", "runs/"):
        answer = get(server, path)
        assert answer.status_code == 404 and b"cache" not in answer.content and b"runs-1" not in answer.content, path
    assert get(server, "").status_code == 200 and ".build" not in get(server, "").text


def _closed_by_server(connection: socket.socket, within: float) -> tuple[bool, bytes]:
    """Whether the server closed the connection within `within` seconds, and what it sent before."""
    connection.settimeout(max(within, 0.01))
    received = b""
    try:
        while chunk := connection.recv(4096):
            received += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass
    except TimeoutError:
        return False, received
    return True, received


def _answered_at_once(connection: socket.socket) -> bytes | None:
    """What the server has sent on a connection so far (b"" once closed), None while it waits for the client."""
    connection.setblocking(False)
    try:
        return connection.recv(4096)
    except BlockingIOError:
        return None
    finally:
        connection.setblocking(True)


def test_connections_that_never_finish_their_request_are_closed_in_time_and_others_are_served(server: Server) -> None:
    """Half-sent requests, one trickling in a byte at a time, and more connections than the server takes
    at once: each is closed within REQUEST_S (one over the limit at once, with a 503), and a request
    sent whole meanwhile is served."""
    address = server.httpd.server_address[:2]
    started = time.monotonic()
    half_sent = [socket.create_connection(address) for _ in range(MAX_CONNECTIONS // 2)]
    for connection in half_sent:
        connection.sendall(b"GET /index.html HT")
    trickle = socket.create_connection(address)
    stop = threading.Event()

    def send_slowly() -> None:
        for byte in b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n":  # 9 s at this pace
            if stop.wait(0.25):
                return
            try:
                trickle.send(bytes([byte]))
            except OSError:
                return

    sender = threading.Thread(target=send_slowly, daemon=True)
    sender.start()
    idle: list[socket.socket] = []
    try:
        assert get(server, "index.html").status_code == 200  # served while they wait
        idle += [socket.create_connection(address) for _ in range(MAX_CONNECTIONS)]  # more than the slots left
        time.sleep(1.0)
        refused = [answer for answer in map(_answered_at_once, idle) if answer is not None]
        assert len(refused) >= MAX_CONNECTIONS // 2 - 1 and set(refused) <= {b"", _BUSY}, refused[:3]
        for connection in [*half_sent, trickle, *idle]:
            closed, received = _closed_by_server(connection, started + REQUEST_S + 3 - time.monotonic())
            assert closed and b"200 OK" not in received
        assert get(server, "index.html").status_code == 200
    finally:
        stop.set()
        sender.join()
        for connection in [*half_sent, trickle, *idle]:
            connection.close()


_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 5\r\nConnection: close\r\n\r\n"


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
