"""The live matrix view, drawn by Rich's recording console: what each frame shows, and that it fits."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from runner.bundle import formats
from runner.bundle.schema import STATUSES, Bundle, DecodeCell, Engine, PrefillPoint
from runner.live_view import STYLES, LiveView
from runner.plan import PlanSpec

K = 1024
# The default matrix of a 1M-context server: seven contexts, eight concurrency columns.
CONTEXTS = [8 * K, 16 * K, 32 * K, 64 * K, 128 * K, 256 * K, 1_043_456]
CONCURRENCY = [1, 2, 4, 8, 16, 32, 64, 128]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def plan(contexts: list[int] = CONTEXTS, concurrency: list[int] = CONCURRENCY) -> PlanSpec:
    return PlanSpec(contexts=contexts, prefill_contexts=contexts, concurrency=concurrency, duration=30, max_output=4096)


def started_view(spec: PlanSpec, bundle: Bundle | None = None, clock: Clock | None = None) -> LiveView:
    """A view that has seen run_started, drawing on a console that is not a terminal (so no redraws)."""
    view = LiveView(console=Console(file=io.StringIO(), width=80), clock=clock or Clock())
    bundle = bundle or Bundle(id="run", model="m", engine=Engine(name="e"))
    total = len(spec.contexts) * len(spec.concurrency) + len(spec.prefill_contexts)
    view.run_started(spec, bundle, Path("content/runs/run.json"), len(bundle.decode) + len(bundle.prefill), total)
    return view


def frame(view: LiveView, width: int = 80) -> str:
    """One frame as a terminal of `width` columns shows it."""
    console = Console(record=True, width=width, file=io.StringIO())
    console.print(view)
    return console.export_text()


def row(text: str, label: str) -> list[list[str]]:
    """The cells of every grid line that starts with `label`, one list per column block."""
    return [line.split()[1:] for line in text.splitlines() if line.split()[:1] == [label]]


def cell(context: int, n: int, status: str = "Valid", tok_s: float | None = None) -> DecodeCell:
    return DecodeCell(context_tokens=context, concurrency=n, status=status, total_tok_s=tok_s,
                      ttft_ms=50.0 if tok_s else None)


def full_matrix() -> list[DecodeCell]:
    """Every status and the widest figures, in the default matrix."""
    cells = []
    for i, context in enumerate(CONTEXTS):
        for j, n in enumerate(CONCURRENCY):
            if i >= 5 and j >= 5:
                cells.append(cell(context, n, "Over capacity"))
            elif j == 7:
                cells.append(cell(context, n, "Requests queued", 9_876.54))
            else:
                cells.append(cell(context, n, "Valid", 26_512.0 / (i + 1) + j))
    cells[3] = cell(CONTEXTS[0], 8, "Looped")
    cells[4] = cell(CONTEXTS[0], 16, "Failed")
    return cells


def test_full_default_matrix_fits_80_columns_with_a_figure_per_column() -> None:
    bundle = Bundle(id="run", model="m", engine=Engine(name="e"), decode=full_matrix(),
                    prefill=[PrefillPoint(context_tokens=c, status="Valid", prompt_tok_s=30_000.0 / (i + 1), ttft_ms=9.0)
                             for i, c in enumerate(CONTEXTS)])
    view = started_view(plan(), bundle)
    view.run_ended(interrupted=False)
    text = frame(view)
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    header = [line.split() for line in text.splitlines() if line.startswith("Context")]
    assert header[1] == ["Context", *map(str, CONCURRENCY)]  # one decode block: no wrapping at 80 columns
    for i, context in enumerate(CONTEXTS):
        [cells] = row(text, formats.context_label(context))
        assert len(cells) == len(CONCURRENCY)
        for n, shown in zip(CONCURRENCY, cells):
            source = next(c for c in bundle.decode if (c.context_tokens, c.concurrency) == (context, n))
            expected = {"Valid": formats.tok_s(source.total_tok_s), "Requests queued": formats.tok_s(source.total_tok_s) + "*",
                        "Over capacity": "Over-cap", "Looped": "Looped", "Failed": "Failed"}[source.status]
            assert shown == expected
    assert row(text, "8K")[0][:3] == ["26.5K", "26.5K", "26.5K"]
    assert "* Requests queued" in text and "Over-cap: Over capacity" in text
    assert row(text, "tok/s") == [["30K", "15K", "10K", "7,500", "6,000", "5,000", "4,286"]]
    assert "finished: every item is measured; bundle: content/runs/run.json" in text


def test_status_words_stay_whole_where_they_fit() -> None:
    spec = plan(contexts=[4 * K], concurrency=[1, 2, 4])
    bundle = Bundle(id="run", model="m", engine=Engine(name="e"),
                    decode=[cell(4 * K, 1, "Valid", 100.0), cell(4 * K, 2, "Looped"), cell(4 * K, 4, "Over capacity")])
    text = frame(started_view(spec, bundle))
    assert re.search(r"^4K +100\.0 +Looped +Over capacity$", text, re.M)
    assert "Over-cap" not in text


def test_every_status_of_the_schema_draws_with_its_mark() -> None:
    assert set(STATUSES) <= set(STYLES)
    spec = plan(contexts=[4 * K], concurrency=[1, 2, 4, 8, 16, 32])
    figures = {"Valid": 100.0, "Requests queued": 90.0, "Distorted": 80.0}
    bundle = Bundle(id="run", model="m", engine=Engine(name="e"),
                    decode=[cell(4 * K, n, status, figures.get(status)) for n, status in zip(spec.concurrency, STATUSES)])
    text = frame(started_view(spec, bundle))
    assert "100.0" in text and "90.0*" in text and "80.0!" in text
    assert "* Requests queued" in text and "! Distorted" in text


def test_a_wider_matrix_wraps_its_columns_into_blocks() -> None:
    concurrency = [2 ** i for i in range(14)]  # 1 … 8192: far wider than 80 columns
    spec = plan(contexts=[8 * K, 16 * K], concurrency=concurrency)
    bundle = Bundle(id="run", model="m", engine=Engine(name="e"),
                    decode=[cell(c, n, "Valid", 1234.5 + n) for c in (8 * K, 16 * K) for n in concurrency])
    text = frame(started_view(spec, bundle))
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    blocks = row(text, "16K")
    assert len(blocks) >= 2
    assert [v for block in blocks for v in block] == [formats.tok_s(1234.5 + n) for n in concurrency]
    headers = [line.split()[1:] for line in text.splitlines() if line.startswith("Context")][1:]
    assert [n for block in headers for n in block] == [str(n) for n in concurrency]
    # A wider terminal takes the same grid in fewer blocks.
    assert len(row(frame(started_view(spec, bundle), width=200), "16K")) < len(blocks)


def test_the_running_cell_shows_live_tok_s_progress_and_eta() -> None:
    clock = Clock()
    view = started_view(plan(contexts=[8 * K, 16 * K], concurrency=[1, 2, 4]), clock=clock)
    view.cell_started(8 * K, None, 0, 330.0)
    assert "prefill 8K · starting" in frame(view)
    view.phase("settling")
    assert row(frame(view), "tok/s") == [["›…", "·"]]
    assert "prefill 8K · settling" in frame(view)
    view.prefill_done(PrefillPoint(context_tokens=8 * K, status="Valid", prompt_tok_s=12_345.0, ttft_ms=663.6))
    view.cell_started(8 * K, 4, 1, 300.0)
    view.phase("warming")
    assert row(frame(view), "8K") == [["·", "·", "›…"]]
    view.phase("measuring")
    clock.now += 12
    view.live_tokens(12 * 1536)
    text = frame(view)
    assert row(text, "8K") == [["·", "·", "›1,536.0"]]
    assert row(text, "tok/s") == [["12.3K", "·"]]
    assert "decode 8K × 4 · measuring 12 of 30 s · 1,536.0 tok/s" in text
    assert "1/8 · 12 s elapsed · ETA 5 min" in text
    clock.now += 3  # no new count yet: the rate is that of the latest count, not diluted by the wait
    text = frame(view)
    assert row(text, "8K") == [["·", "·", "›1,536.0"]] and "measuring 15 of 30 s · 1,536.0 tok/s" in text
    view.phase("retrying")  # a phase word the driver may add: shown as given, live rate restarts
    text = frame(view)
    assert "decode 8K × 4 · retrying" in text and row(text, "8K") == [["·", "·", "›…"]]


def test_ctrl_c_leaves_the_last_frame_saying_so() -> None:
    view = started_view(plan(contexts=[8 * K], concurrency=[1, 2]))
    view.cell_started(8 * K, None, 0, 60.0)
    view.prefill_done(PrefillPoint(context_tokens=8 * K, status="Failed", error="boom"))
    view.cell_started(8 * K, 1, 1, 60.0)
    view.run_ended(interrupted=True)
    text = frame(view)
    assert "interrupted: finished items are kept in the journal beside content/runs/run.json" in text
    assert row(text, "tok/s") == [["Failed"]] and row(text, "8K") == [["·", "·"]]
    assert "ETA" not in text


def test_the_final_frame_stays_on_a_terminal() -> None:
    """Through Rich's Live on a terminal console: the last thing written is the whole final frame."""
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None, record=True)
    view = LiveView(console=console)
    spec = plan(contexts=[4 * K], concurrency=[1, 2])
    view.run_started(spec, Bundle(id="run", model="m", engine=Engine(name="e")), Path("run.json"), 0, 3)
    view.note("token counts: the server's running usage in every chunk")
    view.cell_started(4 * K, None, 0, 20.0)
    view.prefill_done(PrefillPoint(context_tokens=4 * K, status="Valid", prompt_tok_s=5000.0, ttft_ms=819.2))
    for n in (1, 2):
        view.cell_started(4 * K, n, n, 10.0)
        view.cell_finished(cell(4 * K, n, "Valid", 10.0 * n))
    view.run_ended(interrupted=False)
    screen = out.getvalue()
    last = screen[screen.rindex("Prefill"):]
    assert re.search(r"^4K +10\.0 +20\.0 *$", last, re.M)
    assert "finished: every item is measured" in last
    assert screen.index("token counts") < screen.rindex("Prefill")  # notes print above the live area
