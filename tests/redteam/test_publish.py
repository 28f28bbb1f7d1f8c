"""Publishing is all-or-nothing: an error, Ctrl-C, SIGKILL or a full disk leaves the whole old site or the whole new one."""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import sitegen.publish.swap
from sitegen.build import build_site
from sitegen.errors import InputError
from sitegen.pages.render import DEFAULT_TEMPLATES
from tests.builders import ROOT, tree_digest
from tests.sample_site import MIMO, PAGES, write_content


def _change(content: Path) -> None:
    """An edit that changes every page: the navigation shows page titles."""
    page = content / "pages" / "20-methodology.md"
    page.write_text(page.read_text().replace("# ", "# Changed ", 1))


def _restyled(tmp_path: Path) -> Path:
    """A copy of the templates with another stylesheet: a build with it writes every file again, the
    static files (plotly.js, 1.2 MB) among them."""
    templates = tmp_path / "templates"
    shutil.copytree(DEFAULT_TEMPLATES, templates)
    with (templates / "static" / "style.css").open("a") as style:
        style.write("\nbody { letter-spacing: 0.01em; }\n")
    return templates


def _leftovers(tmp_path: Path) -> list[str]:
    """What builds left beside the site, but the stage and state kept for the next build (in `.site.sitegen/`)."""
    work = tmp_path / ".site.sitegen"
    return sorted(p.name for p in work.iterdir() if p.name not in ("stage", "state", "kept-state")) if work.is_dir() else []


@pytest.fixture
def sites(tmp_path: Path) -> tuple[Path, Path, dict, dict]:
    """content/ (already changed), site/ (built before the change), and the digests of the old and new sites."""
    content = write_content(tmp_path)
    out = tmp_path / "site"
    build_site(content, out)
    old = tree_digest(out)
    _change(content)
    build_site(content, tmp_path / "reference")
    new = tree_digest(tmp_path / "reference")
    shutil.rmtree(tmp_path / "reference")
    assert old != new
    return content, out, old, new


def test_sigkill_at_any_moment_leaves_the_old_or_the_new_site_and_the_next_build_works(
        sites: tuple[Path, Path, dict, dict], tmp_path: Path) -> None:
    content, out, old, new = sites
    saved = tmp_path / "old-site"
    shutil.copytree(out, saved)
    found = []
    chance = random.Random(13)
    for attempt in range(6):
        shutil.rmtree(out)
        shutil.copytree(saved, out)
        build = subprocess.Popen([sys.executable, "-m", "sitegen", "build", "--content", str(content), "--out", str(out)],
                                 cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(chance.uniform(0.4, 1.4))
        build.send_signal(signal.SIGKILL)
        build.wait()
        state = tree_digest(out)
        assert state in (old, new), f"attempt {attempt}: a site mixing old and new pages"
        found.append("new" if state == new else "old")
        build_site(content, out)
        assert tree_digest(out) == new and _leftovers(tmp_path) == []
    print("killed builds left:", found)


# A build killed with processes it forked still running: one of them holds its stage and state folders
# (it inherited their locks), as the beside process or a render worker does until it ends.
KILLED_WITH_A_FORKED_PROCESS = """
import os, sys
from pathlib import Path
import sitegen.publish.swap
from sitegen.build import build_site

def killed(*args):
    if os.fork() == 0:
        sys.stdin.read()  # lives on until the test lets it end
        os._exit(0)
    os._exit(9)  # as SIGKILL would: no clean-up runs

sitegen.publish.swap.record_inodes = killed
build_site(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def _waited_on(folder: Path) -> bool:
    """Whether a process waits for the lock on a folder (a blocked waiter, "->", in /proc/locks)."""
    inode = f":{folder.stat().st_ino}"
    lines = map(str.split, Path("/proc/locks").read_text().splitlines())
    return any("->" in fields and any(field.endswith(inode) for field in fields) for fields in lines)


def _release_once_waited_on(folder: Path, release: Callable[[], None], done: threading.Event, seen: list[bool]) -> None:
    """Let the killed build's process end once a build waits for the folder it holds (or once that build is done)."""
    try:
        while not done.wait(0.01):
            if _waited_on(folder):
                seen.append(True)
                return
    finally:
        release()


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="needs /proc/locks to see a build wait for a lock")
def test_a_build_after_a_killed_one_waits_for_its_forked_processes_and_takes_up_its_folders(
        sites: tuple[Path, Path, dict, dict], tmp_path: Path) -> None:
    """The race of the SIGKILL test made certain: the next build starts while the killed build's forked
    process still holds its folders; it waits for that process, rather than leave them as a running build's."""
    content, out, old, new = sites
    work = tmp_path / ".site.sitegen"
    with (tmp_path / "killed.err").open("w") as errors:
        killed = subprocess.Popen([sys.executable, "-c", KILLED_WITH_A_FORKED_PROCESS, str(content), str(out)], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors)
    assert killed.stdin is not None
    done, seen = threading.Event(), []
    try:
        assert killed.wait() == 9, (tmp_path / "killed.err").read_text()
        [held] = work.glob("build-*")
        assert len(list(work.glob("state-*"))) == 1 and tree_digest(out) == old
        releaser = threading.Thread(target=_release_once_waited_on, args=(held, killed.stdin.close, done, seen))
        releaser.start()
        try:
            build_site(content, out)
        finally:
            done.set()
            releaser.join()
    finally:
        killed.stdin.close()  # (closed already where the releaser ran)
    assert tree_digest(out) == new and sorted(p.name for p in work.iterdir()) == ["kept-state", "stage", "state"]
    assert seen == [True]  # the build waited for the killed build's process


def test_an_error_while_publishing_keeps_the_old_site_and_the_next_build_works(
        sites: tuple[Path, Path, dict, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the old site that cannot be linked or copied (as with `chattr +i`) fails the build in one line."""
    content, out, old, new = sites
    real_copy = shutil.copyfile

    def refuse(source: object, target: object, **kwargs: object) -> object:
        if "runs" in str(source) and str(source).startswith(str(out)):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(source))
        return real_copy(source, target, **kwargs)

    (content / "pages" / "20-methodology.md").write_text(PAGES["20-methodology.md"])
    (content / "runs" / "extra.json").write_text((content / "runs" / f"{MIMO}.json").read_text().replace(f'"{MIMO}"', '"extra"', 1))
    monkeypatch.setattr(sitegen.publish.swap.os, "link", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EPERM, "no")))
    monkeypatch.setattr(sitegen.publish.swap.shutil, "copyfile", refuse)
    with pytest.raises(InputError) as failed:
        build_site(content, out)
    assert "cannot write the site: Operation not permitted" in failed.value.line()
    assert "the previous site is kept" in failed.value.line() and "\n" not in failed.value.line()
    assert tree_digest(out) == old and _leftovers(tmp_path) == []
    monkeypatch.undo()
    build_site(content, out)
    assert (out / "runs" / "extra" / "index.html").is_file() and _leftovers(tmp_path) == []


def test_ctrl_c_while_publishing_keeps_the_old_site(sites: tuple[Path, Path, dict, dict], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    content, out, old, new = sites
    real_reuse = sitegen.publish.swap.Stage.reuse
    calls = []

    def interrupted(self: sitegen.publish.swap.Stage, relative: str, published: Path) -> None:
        calls.append(relative)
        if len(calls) == 3:
            raise KeyboardInterrupt
        real_reuse(self, relative, published)

    (content / "pages" / "20-methodology.md").write_text(PAGES["20-methodology.md"])
    (content / "runs" / "extra.json").write_text((content / "runs" / f"{MIMO}.json").read_text().replace(f'"{MIMO}"', '"extra"', 1))
    monkeypatch.setattr(sitegen.publish.swap.Stage, "reuse", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_site(content, out)
    assert tree_digest(out) == old and _leftovers(tmp_path) == []
    monkeypatch.undo()
    build_site(content, out)
    assert (out / "runs" / "extra" / "index.html").is_file()


def test_a_stale_build_folder_is_removed_and_a_running_builds_is_not(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    stale = tmp_path / ".site-build-killed"
    (stale / "runs").mkdir(parents=True)
    live = tmp_path / ".site-build-live"
    live.mkdir()
    held = sitegen.publish.swap._lock(live)
    try:
        build_site(content, tmp_path / "site")
    finally:
        os.close(held)
    assert not stale.exists() and live.exists()


def test_a_rebuild_restores_a_file_deleted_from_the_site(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    out = tmp_path / "site"
    build_site(content, out)
    before = tree_digest(out)
    for name in (f"runs/{MIMO}/index.txt", "index.html", "static/plotly-basic.min.js"):
        (out / name).unlink()
    build_site(content, out)
    assert tree_digest(out) == before


def _tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("disk", ["tmpfs", "patched"])
def test_a_full_disk_during_a_build_is_one_line_and_keeps_the_old_site(tmp_path: Path, disk: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    content = write_content(tmp_path)
    root = tmp_path / "disk"
    if disk == "tmpfs":
        built = tmp_path / "measure"
        build_site(content, built)
        size = sum(p.stat().st_size for p in built.rglob("*") if p.is_file())
        if not _tmpfs(root, f"{size + 3 * 4096 * 100}"):
            pytest.skip("no permission to mount a tmpfs here; the patched case covers it")
    else:
        root.mkdir()
    try:
        out = root / "site"
        build_site(content, out)
        old = tree_digest(out)
        templates = _restyled(tmp_path)
        if disk == "patched":
            def full(self: sitegen.publish.swap.Stage, relative: str, source: Path) -> None:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path(relative)))
            monkeypatch.setattr(sitegen.publish.swap.Stage, "copy", full)
        with pytest.raises(InputError) as failed:
            build_site(content, out, templates)
        assert "cannot write the site: No space left on device" in failed.value.line()
        assert tree_digest(out) == old and sorted(p.name for p in root.iterdir()) == [".site.sitegen", "site"]
        assert sorted(p.name for p in (root / ".site.sitegen").iterdir()) == ["kept-state", "state"]
    finally:
        if disk == "tmpfs":
            subprocess.run(["umount", str(root)], check=True)


def _chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0 if shutil.which("chattr") else False


def test_the_reported_chattr_case_publishes_every_page_and_the_next_build_works(tmp_path: Path) -> None:
    """The issue's steps, with 40 runs: a run folder made immutable, a content page changed, two builds."""
    content = write_content(tmp_path)
    source = json.loads((content / "runs" / f"{MIMO}.json").read_text())
    for number in range(40):
        source["id"] = f"run-{number:04d}"
        (content / "runs" / f"run-{number:04d}.json").write_text(json.dumps(source))
    out = tmp_path / "site"
    build_site(content, out)
    stuck = out / "runs" / "run-0030"
    if not _chattr("+i", stuck):
        pytest.skip("chattr +i is not permitted here")
    try:
        _change(content)
        build_site(content, out)  # the old site cannot be deleted whole; the new one is published all the same
        pages = list(out.rglob("index.html"))
        assert len(pages) > 40 and all("Changed " in p.read_text() for p in pages)
    finally:
        for path in [stuck, *tmp_path.glob(".site.sitegen/*/runs/run-0030")]:  # the old site, left aside or kept, holds it now
            _chattr("-i", path)
    build_site(content, out)  # and the old site left aside goes now
    assert _leftovers(tmp_path) == []
