"""Content folders the tests write for themselves, so none reads the committed demo content/: three
runs with known figures, two short markdown pages, and sites built from them."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import pytest

from runner.bundle.schema import Bundle, encode_bundle
from sitegen.build import build_site
from tests.builders import make_bundle

# The three sample runs: two models on 2 × H200 NVL, which makes one comparison (its baseline MIMO says
# neither when nor by whom it was measured), and a third model on 8 × H200 SXM; three models on two GPU types in all.
LING, MIMO, INKLING = "ling-h200-nvl", "mimo-h200-nvl", "inkling-h200-sxm"

# The pages: an about page and a methodology page with a table and each heading the run pages link to.
PAGES = {
    "10-about.md": "# About\n\nEvery figure comes from its run's bundle; [Methodology](../methodology/index.html) says how.\n",
    "20-methodology.md": (
        "# Methodology\n\nHow each figure is measured.\n\n"
        "| Figure | Meaning |\n| --- | --- |\n| total tok/s | output tokens per second of every request together |\n\n"
        "## Capacity at a target\n\nThe Valid cell with the most total tok/s that meets both targets.\n\n"
        "## Speculative decoding\n\nRead from the server's own counters.\n\n"
        "## Energy\n\nJoules per output token over the window.\n\n"
        "## Tail latency\n\nThe p90 and p99 beside the medians.\n\n"
        "## Repeats and noise\n\nMedians of the repeats, and their spread.\n"
    ),
}


def sample_runs() -> list[Bundle]:
    """The three sample runs (LING, MIMO, INKLING), each with make_bundle's figures at its own scale."""
    return [
        make_bundle(LING),
        msgspec.structs.replace(make_bundle(MIMO, model="MiMo-V2.6-Flash-RL", version="0.29.1", measured_at=None, scale=1.3),
                                submitter=None, origin=None),
        make_bundle(INKLING, model="Inkling-NVFP4", gpu="H200 SXM", gpu_count=8, version="0.29.0", scale=0.45,
                    measured_at=dt.datetime(2026, 9, 17, 20, 13, tzinfo=dt.timezone.utc)),
    ]


def sample_run(run_id: str) -> Bundle:
    """One of the sample runs, by id."""
    return next(bundle for bundle in sample_runs() if bundle.id == run_id)


def sample_document(run_id: str) -> dict:
    """A sample run as the JSON its file holds, for tests that edit it as a hand edit would."""
    return json.loads(encode_bundle(sample_run(run_id)))


def write_content(folder: Path, runs: Iterable[Bundle] | None = None, pages: bool = True) -> Path:
    """folder/content, a site's input: runs/<id>.json of each bundle (sample_runs() unless given), and PAGES unless not asked."""
    content = folder / "content"
    (content / "runs").mkdir(parents=True)
    for bundle in sample_runs() if runs is None else runs:
        (content / "runs" / f"{bundle.id}.json").write_bytes(encode_bundle(bundle))
    if pages:
        (content / "pages").mkdir()
        for name, text in PAGES.items():
            (content / "pages" / name).write_text(text)
    return content


def sample_file(folder: Path, run_id: str = MIMO) -> Path:
    """A sample run alone, written as the bundle file folder/content/runs/<run_id>.json."""
    return write_content(folder, [sample_run(run_id)], pages=False) / "runs" / f"{run_id}.json"


def built_sample(folder: Path) -> tuple[Path, Path]:
    """The sample content written under `folder`, and a site built from it (folder/site)."""
    content = write_content(folder)
    build_site(content, folder / "site")
    return content, folder / "site"


def build_large_site(folder: Path, count: int, model: Callable[[int], str], speedup: Callable[[int], float],
                     gpu: Callable[[int], str] | None = None, sizes: Sequence[tuple[object, str, int]] = ()) -> Path:
    """Build `count` runs and PAGES into folder/site, with listing sizes (module, name, value) made small.

    Run i is the sample runs' in turn with its own id, model(i), date and gpu(i) where given, and
    measures speedup(i) times their total tok/s.
    """
    bases = [json.loads(encode_bundle(bundle)) for bundle in sample_runs()]
    content = write_content(folder, runs=())
    for i in range(count):
        bundle = json.loads(json.dumps(bases[i % len(bases)]))
        bundle.update(id=f"run-{i:02d}", model=model(i), measured_at=f"2026-08-{i + 1:02d}T10:00:00Z")
        if gpu is not None:
            bundle["hardware"]["gpu"] = gpu(i)
        for cell in bundle["decode"]:
            if cell.get("total_tok_s") is not None:
                cell["total_tok_s"] = round(cell["total_tok_s"] * speedup(i), 1)
        (content / "runs" / f"run-{i:02d}.json").write_text(json.dumps(bundle))
    out = folder / "site"
    with pytest.MonkeyPatch.context() as patch:
        for module, name, value in sizes:
            patch.setattr(module, name, value)
        build_site(content, out)
    return out
