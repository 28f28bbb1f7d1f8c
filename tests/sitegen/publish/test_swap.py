"""Double-buffered publication: the site before last is the next build's stage, brought up to date
with what changed, checked before use, and never published half-updated."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

import sitegen.content.catalog
import sitegen.publish.manifest
import sitegen.publish.stage
import sitegen.publish.stage_check
import sitegen.publish.swap
import sitegen.rebuild.keys
import sitegen.rebuild.plan
from sitegen.build import build_site
from sitegen.errors import InputErrors
from sitegen.pages.render import DEFAULT_TEMPLATES
from tests.builders import ROOT, tree_digest
from tests.sample_site import MIMO, write_content


def _change_run(content: Path, value: float = 999.9) -> None:
    """A resubmitted run: one figure of one bundle changes."""
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    bundle["decode"][0]["total_tok_s"] = value
    path.write_text(json.dumps(bundle))


def _fresh(content: Path, tmp_path: Path) -> dict[str, str]:
    """The digest of a site built from nothing, for comparison."""
    fresh = tmp_path / "fresh" / "site"
    build_site(content, fresh)
    digest = tree_digest(fresh)
    shutil.rmtree(fresh.parent)
    return digest


def _work(out: Path) -> Path:
    """The folder beside the site with everything of a build but the site."""
    return out.parent / f".{out.name}.sitegen"


def _kept(out: Path) -> Path:
    return _work(out) / "stage"


def _state(out: Path) -> Path:
    return _work(out) / "state"


@pytest.fixture
def site_with_stage(tmp_path: Path) -> tuple[Path, Path]:
    """content/ and a site built twice (one change between), so the previous site is kept as the stage."""
    content = write_content(tmp_path)
    out = tmp_path / "site"
    build_site(content, out)
    _change_run(content, 111.1)
    build_site(content, out)
    assert _kept(out).is_dir()
    return content, out


@pytest.fixture
def site_with_snapshots(site_with_stage: tuple[Path, Path]) -> tuple[Path, Path]:
    """A site built four times: the kept stage's record holds its folders' snapshots, so the next check trusts them."""
    content, out = site_with_stage
    for value in (222.2, 333.3):
        _change_run(content, value)
        build_site(content, out)
    return content, out


def test_a_rebuild_lists_only_the_kept_stages_folders_that_changed(
        site_with_snapshots: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_snapshots
    listed = tmp_path / "listed"
    real = sitegen.publish.stage_check._Checker.visit

    def visit(self: sitegen.publish.stage_check._Checker, folder: int, relative: str, trusted: bool) -> bool:
        if not trusted:
            with listed.open("a") as file:  # the check runs in a forked process
                file.write(relative + "\n")
        return real(self, folder, relative, trusted)

    monkeypatch.setattr(sitegen.publish.stage_check._Checker, "visit", visit)
    _change_run(content)
    build_site(content, out)
    others = [f"runs/{p.parent.name}" for p in (out / "runs").glob("*/index.html") if p.parent.name != MIMO]
    folders = listed.read_text().splitlines()
    # The top is listed; so may be folders the stage's build changed in its last few milliseconds (their
    # snapshots are not kept); every other run's folder is trusted by its snapshot.
    assert folders[0] == "" and others and not set(others) & set(folders)
    assert tree_digest(out) == _fresh(content, tmp_path)


def linked_reuses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the stage links from the published site (Stage.reuse), as the build asks, in order."""
    linked: list[str] = []
    real_reuse = sitegen.publish.stage.Stage.reuse

    def reuse(self: sitegen.publish.stage.Stage, relative: str, published: Path) -> None:
        linked.append(relative)
        real_reuse(self, relative, published)

    monkeypatch.setattr(sitegen.publish.stage.Stage, "reuse", reuse)
    return linked


def test_a_rebuild_writes_only_the_changed_runs_outputs_and_its_listings(
        site_with_stage: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_stage
    linked = linked_reuses(monkeypatch)
    inodes = lambda: {p.relative_to(out).as_posix(): p.stat().st_ino for p in out.rglob("*") if p.is_file()}  # noqa: E731
    before = inodes()
    _change_run(content)
    build_site(content, out)
    written = {path for path, inode in inodes().items() if before.get(path) != inode}  # in this process or a forked one
    runs = {p.stem for p in (content / "runs").glob("*.json")} - {MIMO}
    assert not [p for p in written if any(f"runs/{other}/" in p for other in runs)]
    assert {f"runs/{MIMO}/index.html", "data/runs-0.js", "index.html", "runs.json"} <= written
    # The stage lacks at most what the previous build changed (the same run's outputs, rendered again
    # now): nothing of the other runs is linked again.
    assert not [p for p in linked if any(f"runs/{other}/" in p for other in runs)]
    assert tree_digest(out) == _fresh(content, tmp_path)


def test_a_rebuild_of_unchanged_content_writes_no_listing_data(site_with_stage: tuple[Path, Path]) -> None:
    content, out = site_with_stage
    before = {p: (out / p).stat().st_ino for p in ("data/runs-0.js", "data/sort-peak-descending.js", "runs.json", "runs.csv")}
    build_site(content, out)
    assert {p: (out / p).stat().st_ino for p in before} == before


def test_a_build_killed_between_update_and_swap_leaves_the_old_site_and_the_next_build_is_right(
        site_with_stage: tuple[Path, Path], tmp_path: Path) -> None:
    content, out = site_with_stage
    old = tree_digest(out)
    _change_run(content)
    killed = subprocess.run(
        [sys.executable, "-c",
         "import os, sys; from pathlib import Path; import sitegen.publish.swap as s; from sitegen.build import build_site\n"
         "s._swap = lambda *args: os._exit(9)  # dies as SIGKILL would: no cleanup runs\n"
         "build_site(Path(sys.argv[1]), Path(sys.argv[2]))",
         str(content), str(out)], cwd=ROOT, capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    assert tree_digest(out) == old
    assert list(_work(out).glob("build-*")) and list(_work(out).glob("state-*")) and not _kept(out).exists()  # the half-updated stage and state
    build_site(content, out)
    assert tree_digest(out) == _fresh(content, tmp_path)
    assert sorted(p.name for p in _work(out).iterdir()) == ["kept-state", "stage", "state"]


def test_a_build_killed_between_the_site_and_its_state_leaves_the_new_site_and_the_next_build_is_right(
        site_with_stage: tuple[Path, Path], tmp_path: Path) -> None:
    """The state beside the site is then the previous site's: its stamp names another folder, so it is
    not trusted (its manifest would call the new site's changed pages current)."""
    content, out = site_with_stage
    _change_run(content)
    killed = subprocess.run(
        [sys.executable, "-c",
         "import os, sys; from pathlib import Path; import sitegen.publish.swap as s; from sitegen.build import build_site\n"
         "s._publish_state = lambda *args: os._exit(9)\n"
         "build_site(Path(sys.argv[1]), Path(sys.argv[2]))",
         str(content), str(out)], cwd=ROOT, capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    assert tree_digest(out) == _fresh(content, tmp_path)
    _change_run(content, 111.1)  # back to what the state describes
    report = build_site(content, out)
    assert "0 unchanged and reused" in report and tree_digest(out) == _fresh(content, tmp_path)
    assert sorted(p.name for p in _work(out).iterdir()) == ["kept-state", "stage", "state"]


@pytest.mark.parametrize("built", ["site_with_stage", "site_with_snapshots"])
def test_a_tampered_stage_is_not_trusted(built: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    content, out = request.getfixturevalue(built)
    stage = _kept(out)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    other = next(p.parent.name for p in (stage / "runs").glob("*/index.txt") if p.parent.name != MIMO)
    replaced = stage / "runs" / other / "index.txt"
    replaced.unlink()
    replaced.write_text("edited in the stage")  # a new file where a published one was
    (stage / "runs" / other / "measurements.csv").unlink()
    (stage / "runs" / other / "measurements.csv").symlink_to(secret)  # a link where a file goes
    (stage / "stray.html").write_text("planted")
    (stage / "runs" / "planted").symlink_to(tmp_path, target_is_directory=True)
    (stage / "index.html").unlink()
    (stage / "index.html").mkdir()  # a folder where a file goes
    build_site(content, out)
    assert tree_digest(out) == _fresh(content, tmp_path)
    assert secret.read_text() == "outside" and not (out / "stray.html").exists()
    assert not any(p.is_symlink() for p in out.rglob("*"))


def test_a_rebuild_keeps_the_cache_files_the_state_before_last_shares_instead_of_linking_them(
        site_with_snapshots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_snapshots
    linked = linked_reuses(monkeypatch)
    before = {p.name: p.stat().st_ino for p in sitegen.content.catalog.cache_folder(_state(out)).iterdir()}
    _change_run(content)
    build_site(content, out)
    after = {p.name: p.stat().st_ino for p in sitegen.content.catalog.cache_folder(_state(out)).iterdir()}
    assert not [p for p in linked if p.startswith(".")]
    # the head, the changed run's record file and what settling found (among runs one of which changed)
    assert {name for name in after if before[name] != after[name]} == {"head", "settled", sitegen.content.catalog._shard(f"{MIMO}.json").rpartition("/")[2]}


def test_a_tampered_kept_state_is_not_trusted(site_with_snapshots: tuple[Path, Path], tmp_path: Path) -> None:
    content, out = site_with_snapshots
    kept = _work(out) / "kept-state"
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    shard = next(p for p in (kept / "cache").glob("runs-*") if p.name != sitegen.content.catalog._shard(f"{MIMO}.json").rpartition("/")[2])
    shard.unlink()
    shard.write_bytes(b"\x00not msgpack")  # a file put in place of a published one
    (kept / "cache" / "pairs").unlink()
    (kept / "cache" / "pairs").symlink_to(secret)  # a link where a file goes
    (kept / "manifest").unlink()
    (kept / "manifest").mkdir()  # a folder where a file goes
    (kept / "manifest" / "x").write_text("x")
    (kept / "stray").write_text("planted")
    _change_run(content)
    build_site(content, out)
    assert tree_digest(out) == _fresh(content, tmp_path) and secret.read_text() == "outside"
    cache = sitegen.content.catalog.read_cache(_state(out), sitegen.rebuild.keys.code_digest(DEFAULT_TEMPLATES))
    assert len(cache.entries) == 3 and cache.pairs and not cache.unreadable
    assert sorted(p.name for p in _state(out).iterdir()) == ["cache", "inodes", "manifest", "site-stamp"]


def test_files_removed_from_or_added_to_the_published_site_are_put_right(site_with_stage: tuple[Path, Path], tmp_path: Path) -> None:
    """The published site is checked too: a file deleted there is rendered again, a stray is not carried."""
    content, out = site_with_stage
    next((out / "runs").glob("*/index.txt")).unlink()
    (out / "extra.html").write_text("not built")
    (out / "runs" / "extra").mkdir()
    build_site(content, out)
    assert tree_digest(out) == _fresh(content, tmp_path)


def test_without_an_atomic_exchange_the_stage_is_still_kept_and_right(
        site_with_stage: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_stage
    monkeypatch.setattr(sitegen.publish.swap, "_exchange", lambda a, b: False)
    for value in (222.2, 333.3):
        _change_run(content, value)
        build_site(content, out)
        assert tree_digest(out) == _fresh(content, tmp_path)
    assert _kept(out).is_dir() and not list(tmp_path.glob(".site-old-*"))


def test_a_stage_held_by_a_running_build_is_left_alone(site_with_stage: tuple[Path, Path], tmp_path: Path) -> None:
    content, out = site_with_stage
    held = sitegen.publish.swap._lock(_kept(out))
    try:
        before = tree_digest(_kept(out))
        _change_run(content)
        build_site(content, out)  # in a fresh folder
        assert tree_digest(_kept(out)) == before
    finally:
        os.close(held)
    assert tree_digest(out) == _fresh(content, tmp_path)


def test_the_kept_stage_is_checked_in_another_process_while_the_runs_are_read(
        site_with_stage: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_stage
    checked_by = tmp_path / "checked-by"
    real = sitegen.publish.stage_check.check

    def check(*args: object) -> sitegen.publish.stage_check.Checked:
        checked_by.write_text(str(os.getpid()))
        return real(*args)

    monkeypatch.setattr(sitegen.publish.stage_check, "check", check)
    _change_run(content)
    build_site(content, out)
    assert int(checked_by.read_text()) != os.getpid()
    assert tree_digest(out) == _fresh(content, tmp_path)


def test_a_stage_that_cannot_be_checked_is_replaced_by_a_fresh_one(
        site_with_stage: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_stage

    def unreadable(root: str, *args: object) -> sitegen.publish.stage_check.Checked:
        raise PermissionError(13, "Permission denied", f"{root}/runs")

    monkeypatch.setattr(sitegen.publish.stage_check, "check", unreadable)
    _change_run(content)
    build_site(content, out)
    assert tree_digest(out) == _fresh(content, tmp_path)
    assert sorted(p.name for p in _work(out).iterdir()) == ["kept-state", "stage", "state"]


def test_a_build_that_fails_while_the_stage_is_checked_keeps_the_site_and_the_stage(
        site_with_stage: tuple[Path, Path], tmp_path: Path) -> None:
    content, out = site_with_stage
    old = tree_digest(out)
    (content / "runs" / "broken.json").write_text("{not json")
    with pytest.raises(InputErrors):
        build_site(content, out)
    assert tree_digest(out) == old
    assert sorted(p.name for p in _work(out).iterdir()) == ["kept-state", "stage", "state"]
    (content / "runs" / "broken.json").unlink()
    _change_run(content)
    build_site(content, out)
    assert tree_digest(out) == _fresh(content, tmp_path)


def _published(out: Path) -> tuple[dict, dict[str, int] | None]:
    """The published outputs and, where it vouches for the manifest, the record of their files' inodes."""
    return sitegen.publish.manifest.read_published(_state(out), sitegen.publish.manifest.read_record(_state(out)))


def test_the_record_names_every_published_file_by_its_inode(site_with_stage: tuple[Path, Path]) -> None:
    content, out = site_with_stage
    _change_run(content)
    build_site(content, out)
    outputs, recorded = _published(out)
    published = {str(p.relative_to(out)): p.stat().st_ino for p in out.rglob("*") if p.is_file()}
    assert recorded == published
    bookkeeping = {f"{sitegen.content.catalog.CACHE_DIR}{p.name}" for p in sitegen.content.catalog.cache_folder(_state(out)).iterdir()}
    assert sorted(f for _, files in outputs.values() for f in files) == sorted([*published, *bookkeeping])


def test_the_record_is_written_in_pieces_as_msgpack_encodes_it_whole(site_with_stage: tuple[Path, Path]) -> None:
    content, out = site_with_stage
    _change_run(content)
    build_site(content, out)
    data = (_state(out) / "inodes").read_bytes()
    record = msgspec.msgpack.decode(data, type=sitegen.publish.manifest.InodesFile)
    assert msgspec.msgpack.encode(record) == data and len(msgspec.msgpack.decode(record.stage_files)) > 0


def test_a_first_record_in_pieces_is_what_msgspec_encodes() -> None:
    record = sitegen.publish.manifest.InodesFile((1, 2), msgspec.Raw(msgspec.msgpack.encode({"a": 3})))  # no site before it
    assert b"".join(map(bytes, sitegen.publish.manifest._pieces(record))) == msgspec.msgpack.encode(record)


def test_a_rebuild_reads_the_published_files_inodes_from_its_record_not_a_walk(
        site_with_stage: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_stage
    walks: list[Path] = []
    real_walk = sitegen.rebuild.plan.plain_files
    monkeypatch.setattr(sitegen.rebuild.plan, "plain_files", lambda root: walks.append(root) or real_walk(root))
    _change_run(content)
    build_site(content, out)
    assert walks == [] and tree_digest(out) == _fresh(content, tmp_path)


def test_an_older_site_restored_from_a_copy_is_built_whole_since_the_state_describes_another(
        site_with_stage: tuple[Path, Path], tmp_path: Path) -> None:
    """The state beside the site names the folder it describes by its stamp: a restored copy is another
    folder (its files' new inodes may even be other files' recorded numbers, as ext4 hands freed numbers
    out again), whose pages the manifest would otherwise call current."""
    content, out = site_with_stage
    shutil.copytree(out, tmp_path / "backup")
    _change_run(content)
    build_site(content, out)
    shutil.rmtree(out)
    shutil.copytree(tmp_path / "backup", out)  # the site of the content before the change
    report = build_site(content, out)
    assert "0 unchanged and reused" in report and tree_digest(out) == _fresh(content, tmp_path)


def test_a_manifest_the_record_does_not_vouch_for_is_checked_against_a_walk_of_the_site(
        site_with_stage: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, out = site_with_stage
    manifest = _state(out) / "manifest"
    time.sleep(0.02)  # a change time ticks by the kernel's clock tick, not by the nanosecond
    manifest.write_bytes(manifest.read_bytes())  # the same bytes, written again: not the file its record names
    walks: list[Path] = []
    real_walk = sitegen.rebuild.plan.plain_files
    monkeypatch.setattr(sitegen.rebuild.plan, "plain_files", lambda root: walks.append(root) or real_walk(root))
    _change_run(content)
    report = build_site(content, out)
    assert walks == [out.resolve()] and "(39 outputs rendered, 42 unchanged and reused)" in report
    assert tree_digest(out) == _fresh(content, tmp_path)


def test_a_manifest_changed_after_its_build_is_checked_again(site_with_stage: tuple[Path, Path]) -> None:
    """The record vouches only for the manifest file its build wrote: one written over since (a new
    change time) is checked, and one naming a path outside the site is refused whole."""
    _, out = site_with_stage
    outputs, inodes = _published(out)
    assert outputs and inodes is not None
    manifest = _state(out) / "manifest"
    version, raw = msgspec.msgpack.decode(manifest.read_bytes())
    time.sleep(0.02)  # a change time ticks by the kernel's clock tick, not by the nanosecond
    manifest.write_bytes(msgspec.msgpack.encode([version, raw]))  # the same bytes, written again
    assert _published(out) == (outputs, None)
    raw["../outside"] = ["x", ["../outside"]]
    manifest.write_bytes(msgspec.msgpack.encode([version, raw]))
    assert _published(out) == ({}, None)


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a//b", "a/./b", "a/../b", "a\\b", "", "a/", "ok\x00../x"])
def test_a_manifest_path_that_leaves_the_folder_or_names_a_hidden_file_of_the_site_is_refused(path: str) -> None:
    assert not sitegen.publish.manifest._all_inside(["index.html", path])
    assert not sitegen.publish.manifest._all_inside(["index.html", "runs/a/.hidden"])
    assert sitegen.publish.manifest._all_inside(["index.html", "runs/a/index.html", "a..b/c", ".cache/head"])


def test_a_stage_checked_by_a_record_the_build_then_does_not_trust_is_not_used(
        site_with_stage: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check starts from the record before the manifest is decoded; a manifest then refused (here:
    as if unreadable) means the stage was checked against files the build does not take as published:
    a fresh stage is used, and nothing of the old site's is left in the new one."""
    content, out = site_with_stage
    other = next(p for p in (content / "runs").glob("*.json") if p.stem != MIMO)
    other.unlink()
    monkeypatch.setattr(sitegen.rebuild.plan, "read_published", lambda out, record: ({}, None))
    build_site(content, out)
    assert not (out / "runs" / other.stem).exists() and tree_digest(out) == _fresh(content, tmp_path)
