"""Forked processes: bundles decoded by workers (the same records, and every bad file still named, in
file order), the batches workers take, and a call beside the build (its bytes or its exception back)."""

from __future__ import annotations

import errno
import itertools
import os
import time
from pathlib import Path

import pytest

from sitegen.content import catalog
from sitegen.errors import InputError, InputErrors
from sitegen.support import parallel
from tests.sample_site import sample_runs, write_content


def _runs(tmp_path: Path) -> Path:
    return write_content(tmp_path, pages=False) / "runs"


def test_workers_read_the_same_records_as_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path)
    alone = catalog.scan(runs, {}, jobs=1)
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    monkeypatch.setattr(catalog, "SCAN_CHUNK", 1)
    assert catalog.scan(runs, {}, jobs=2) == alone and len(alone) == len(sample_runs())


def test_workers_report_every_bad_file_in_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path)
    (runs / "a-broken.json").write_text("{")
    (runs / "z-wrong.json").write_text('{"id": 3}')
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    with pytest.raises(InputErrors) as raised:
        catalog.scan(runs, {}, jobs=2)
    lines = [e.line() for e in raised.value.errors]
    assert len(lines) == 2 and lines[0].startswith(f"{runs / 'a-broken.json'}:1:2: invalid JSON")
    assert lines[1].startswith(f"{runs / 'z-wrong.json'}:$.id: ")


@pytest.mark.parametrize(("count", "jobs", "largest"), [(26_000, 2, 512), (1_000, 4, 64), (100, 2, 512), (70, 2, 1), (0, 2, 64)])
def test_batches_keep_items_in_order_and_shrink_toward_the_end(count: int, jobs: int, largest: int) -> None:
    items = list(range(count))
    found = parallel.batches(items, jobs, largest)
    assert [item for batch in found for item in batch] == items
    sizes = [len(batch) for batch in found]
    assert all(0 < size <= largest for size in sizes) and sizes == sorted(sizes, reverse=True)
    for start, size in zip(itertools.accumulate([0, *sizes]), sizes):  # none takes more than its share of what is left
        assert size <= max((count - start) // (jobs * parallel.SHARES), min(parallel.SMALLEST, largest))
    if count >= 26_000:  # few batches: a setup's tasks stay in one worker
        assert len(found) < count // largest + 40 and sizes[0] == largest and sizes[-1] <= parallel.SMALLEST


def test_workers_return_each_result_once_in_order_or_as_they_finish() -> None:
    items = list(range(1_000))
    assert list(parallel.fork_map(abs, items, 2, 64)) == items
    found = list(parallel.fork_map(lambda item: (item, os.getpid()), items, 2, 64, ordered=False))
    assert sorted(item for item, _ in found) == items and os.getpid() not in {pid for _, pid in found}


def test_a_call_beside_runs_in_another_process_and_hands_back_its_bytes() -> None:
    with parallel.Beside(lambda: str(os.getpid()).encode()) as beside:
        assert int(beside.result()) != os.getpid()
        assert int(beside.result()) != os.getpid()  # asked again: the same answer, kept
    assert parallel.Beside(lambda: str(os.getpid()).encode(), fork=False).result() == str(os.getpid()).encode()


@pytest.mark.parametrize("fork", [True, False])
def test_what_a_call_beside_raises_is_raised_again_by_its_result(fork: bool) -> None:
    def full() -> bytes:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "site/index.html")

    with pytest.raises(OSError) as raised:
        parallel.Beside(full, fork=fork).result()
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == "site/index.html"

    def refused() -> bytes:
        raise InputErrors([InputError("../outside", None, "refusing to write outside the output folder")])

    with pytest.raises(InputErrors) as many:
        parallel.Beside(refused, fork=fork).result()
    assert [e.line() for e in many.value.errors] == ["../outside: refusing to write outside the output folder"]


def test_a_call_beside_that_dies_or_is_stopped_leaves_no_process(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="ended without its result"):
        parallel.Beside(lambda: os._exit(3)).result()
    started = tmp_path / "started"
    beside = parallel.Beside(lambda: started.write_text("yes") and time.sleep(60) or b"")
    while not started.exists():
        time.sleep(0.01)
    pid = beside.pid
    beside.stop()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # ended and reaped: not a child of this process any more
