"""The journal of finished cells: a torn last line after a crash, and no second journal over one."""

from __future__ import annotations

import datetime as dt

import pytest

from runner.bundle.schema import Bundle, DecodeCell, Engine, PrefillPoint
from runner.errors import JournalError
from runner.journal import Header, Journal, journal_path
from runner.plan import PlanSpec


def test_journal_survives_a_torn_last_line(tmp_path) -> None:
    path = journal_path(tmp_path / "run.json")
    header = Header(bundle=Bundle(id="x", model="m", engine=Engine(name="e"), measured_at=dt.datetime.now(dt.timezone.utc)),
                    plan=PlanSpec(contexts=[1024], prefill_contexts=[1024], concurrency=[1], duration=1, max_output=8))
    journal = Journal.create(path, header)
    journal.record(PrefillPoint(context_tokens=1024, status="Valid", prompt_tok_s=1.0, ttft_ms=1.0))
    journal.record(DecodeCell(context_tokens=1024, concurrency=1, status="Failed", error="boom"))
    journal.close()  # as a crashed runner's lock goes with it
    with path.open("ab") as handle:
        handle.write(b'{"kind":"decode","cell":{"context_tok')
    again = Journal.load(path)
    assert list(again.points) == [1024]
    assert not again.finished(again.cells[(1024, 1)])  # Failed cells are measured again
    assert len(again.bundle().decode) == 1
    with pytest.raises(JournalError):
        Journal.create(path, header)
