"""`sitegen serve`: build, serve the site over HTTP, and rebuild whenever content or templates change.

Each build replaces the output folder by a rename, so the server looks files up by
path on every request and always serves one whole site, old or new (site_http: its
files only, with bounded connections). A build that fails prints its errors and leaves
the previous site being served. Changes are seen through the operating system's file
events (watchfiles), not by walking the folders.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from pathlib import Path

import watchfiles

from runner.bundle.error_lines import print_error
from sitegen.build import build_site, runs_folder
from sitegen.errors import InputError, InputErrors
from sitegen.pages.render import DEFAULT_TEMPLATES
from sitegen.serve.http_server import listen

# How long the watcher waits for a file event before it checks whether to stop (and, the first
# time, says it is ready): short enough for a prompt stop, long enough to cost nothing.
WAIT_MS = 200


def watched(path: str, folders: list[Path], skip: Path | None = None) -> bool:
    """Whether a change to path starts a build: hidden files and folders, editor backups (`~`) and `skip` do not.

    `skip` is the output folder: one inside a watched folder must not make each build start the next.
    """
    changed = Path(os.path.abspath(path))
    if skip is not None and changed.is_relative_to(os.path.abspath(skip)):
        return False
    root = next((Path(os.path.abspath(f)) for f in folders if changed.is_relative_to(os.path.abspath(f))), changed.parent)
    parts = changed.relative_to(root).parts
    return not any(part.startswith(".") for part in parts) and not changed.name.endswith("~")


class Server:
    """A built site served on host:port, rebuilt on change until stop()."""

    def __init__(self, content: Path, out: Path, templates: Path | None = None, host: str = "127.0.0.1", *, port: int) -> None:
        runs_folder(content)  # a mistyped --content stops here, before a port is taken
        self.content = content
        self.out = out
        self.templates = templates
        self.watched = [content, templates or DEFAULT_TEMPLATES]
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._building = threading.Lock()  # the watcher's builds never overlap the first one
        self._watcher = threading.Thread(target=self._watch, name="sitegen-watch", daemon=True)
        self.httpd = listen(host, port, os.path.abspath(out))
        # Watch before the first build, so a change made while it runs starts another.
        self._watcher.start()
        self._ready.wait()
        self.build()

    @property
    def url(self) -> str:
        """The site's base URL, with the port actually bound (useful with port 0)."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def build(self) -> bool:
        """Build once; print the report or the errors. False when the previous site stays."""
        try:
            with self._building:
                report = build_site(self.content, self.out, self.templates)
        except (InputError, InputErrors) as exc:
            errors = exc.errors if isinstance(exc, InputErrors) else [exc]
            for error in errors:
                print_error(error.line())
            print("build failed; still serving the previous site", file=sys.stderr, flush=True)
            return False
        except Exception:
            traceback.print_exc()
            print("build failed; still serving the previous site", file=sys.stderr, flush=True)
            return False
        print(report, flush=True)
        return True

    def _watch(self) -> None:
        """Rebuild when any watched file appears, disappears or changes, until stop()."""
        events = watchfiles.watch(
            *(folder for folder in self.watched if folder.is_dir()), watch_filter=lambda _change, path: watched(path, self.watched, self.out),
            stop_event=self._stopping, rust_timeout=WAIT_MS, yield_on_timeout=True, raise_interrupt=False,
        )
        try:
            for changes in events:  # an empty set each WAIT_MS without events; the first says the watcher is up
                self._ready.set()
                if changes:
                    self.build()
        finally:
            self._ready.set()  # a watcher that could not start must not hang the server's start

    def serve_forever(self) -> None:
        """Serve and watch until stop() is called from another thread (or Ctrl-C)."""
        try:
            self.httpd.serve_forever()
        finally:
            self._stopping.set()
            self._watcher.join()
            self.httpd.server_close()

    def stop(self) -> None:
        """Stop serving and watching: serve_forever(), running in another thread, then returns."""
        self._stopping.set()
        self.httpd.shutdown()


def _shown(folder: Path) -> Path:
    """A folder as the user would type it: relative to the working directory when inside it."""
    try:
        return folder.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return folder


def serve(content: Path, out: Path, templates: Path | None, host: str, port: int) -> None:
    """Build, then serve out/ at http://host:port/ and rebuild on every change until Ctrl-C."""
    server = Server(content, out, templates, host, port=port)
    folders = " and ".join(f"{_shown(folder)}/" for folder in server.watched)
    print(f"serving {out}/ at {server.url} — rebuilding on changes to {folders}; Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", flush=True)
