"""Outputs declare their inputs: a key covers each input an output declares and nothing else, and a
page type added by its registration alone is built, then rendered again exactly when its inputs change."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sitegen.build import build_site
from sitegen.content.catalog import Piece, Scanned
from sitegen.figures.summary import peak_cell, valued_cells
from sitegen.pages import registry
from sitegen.pages.context import Site, fingerprints
from sitegen.pages.kinds import Kind, Task
from sitegen.pages.run_pages import Renderer
from sitegen.publish.stage import Stage
from sitegen.rebuild.outputs import Output, Shared, output_key
from sitegen.rebuild.plan import Publication
from sitegen.slug import slugify
from tests.builders import same_as_fresh
from tests.sample_site import LING, MIMO, sample_run, write_content

CHANGED, OTHER = MIMO, LING
SHARED = Shared("code", "[nav]")
FINGERPRINTS = ("a" * 32, "b" * 32)


def test_a_key_covers_every_declared_input_and_nothing_else() -> None:
    output = Output("models/x/index.html", FINGERPRINTS, facts=("X",), context=True)
    key = output_key(output, SHARED)
    assert output_key(Output("models/x/index.html", FINGERPRINTS, facts=("X",), context=True), SHARED) == key
    changed = [
        Output(output.path, (FINGERPRINTS[0], "c" * 32), facts=("X",), context=True),  # another run's bundle
        Output(output.path, FINGERPRINTS[::-1], facts=("X",), context=True),  # the same runs, read in another order
        Output(output.path, FINGERPRINTS, facts=("Y",), context=True),  # another fact
        Output(output.path, FINGERPRINTS, facts=("X", ""), context=True),  # one more fact, however empty
        Output(output.path, FINGERPRINTS, facts=("X",)),  # no longer a page with the shared context
    ]
    assert len({key, *(output_key(o, SHARED) for o in changed)}) == len(changed) + 1
    assert output_key(output, Shared("other code", SHARED.context)) != key
    assert output_key(output, Shared(SHARED.code, "[other nav]")) != key
    plain = Output("runs.json", FINGERPRINTS)
    assert output_key(plain, Shared(SHARED.code, "[other nav]")) == output_key(plain, SHARED), "only a page shows the navigation"


# A new page type, added by its registration alone: a card per model, of its runs' peaks (from a piece of
# each run, made when its bundle is read), and a card per run, rendered from its bundle by the workers.
# Each render notes its output in a file, as the model cards render in the forked process beside the build.


def _peak_line(run: Scanned) -> bytes:
    peak = peak_cell(valued_cells(run.bundle))
    return json.dumps([slugify(run.bundle.model), f"{run.bundle.id}: {peak.total_tok_s if peak else None} tok/s"]).encode()


PEAK_LINE = Piece("peak_line", _peak_line)


def model_card(slug: str) -> str:
    return f"cards/models/{slug}.txt"


def run_card(run_id: str) -> str:
    return f"cards/runs/{run_id}.txt"


def _note(stage: Stage, path: str) -> None:
    with open(stage.root.parent / "rendered.log", "a") as log:
        log.write(path + "\n")


def write_model_cards(stage: Stage, site: Site, plan: Publication) -> None:
    lines: dict[str, list] = {}
    for entry in site.by_id:
        model, line = json.loads(bytes(site.piece(entry, PEAK_LINE)))
        lines.setdefault(model, []).append((entry, line))
    for model, members in lines.items():
        if not plan.unchanged(Output(model_card(model), fingerprints([e for e, _ in members]))):
            _note(stage, model_card(model))
            stage.write(model_card(model), "\n".join(line for _, line in members) + "\n")


def plan_run_cards(site: Site, plan: Publication) -> list[Task]:
    return [("card", str(site.runs / e.name)) for e in site.entries if not plan.unchanged(Output(run_card(e.id), (e.fingerprint,)))]


def render_run_card(renderer: Renderer, path: str) -> None:
    bundle = renderer.load(path).bundle
    _note(renderer.stage, run_card(bundle.id))
    renderer.stage.write(run_card(bundle.id), f"{bundle.model} on {bundle.hardware.gpu}: {len(bundle.decode)} decode cells\n")


MODEL_CARDS = Kind(name="model cards", lane="beside", write=write_model_cards, pieces=(PEAK_LINE,))
RUN_CARDS = Kind(name="run cards", lane="workers", plan=plan_run_cards, renders={"card": render_run_card})


@pytest.fixture()
def content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample content, built with the card kinds registered."""
    monkeypatch.setattr(registry, "KINDS", (*registry.KINDS, MODEL_CARDS, RUN_CARDS))
    return write_content(tmp_path)


def _rendered(tmp_path: Path) -> list[str]:
    """The card outputs rendered since last asked, by any process of any build under tmp_path."""
    found = []
    for log in tmp_path.rglob("rendered.log"):
        found += log.read_text().split()
        log.unlink()
    return sorted(found)


def _model_slug(content: Path, run_id: str) -> str:
    return slugify(json.loads((content / "runs" / f"{run_id}.json").read_text())["model"])


def test_a_page_type_added_by_its_registration_is_built_and_renders_again_exactly_when_its_runs_change(
        content: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    runs = sorted(p.stem for p in (content / "runs").glob("*.json"))
    first = build_site(content, out, jobs=2)
    models = {_model_slug(content, run) for run in runs}
    assert _rendered(tmp_path) == sorted([run_card(run) for run in runs] + [model_card(m) for m in models])
    card = (out / model_card(_model_slug(content, CHANGED))).read_text()
    assert re.fullmatch(rf"{CHANGED}: [0-9.]+ tok/s\n", card)
    other = sample_run(OTHER)
    assert (out / run_card(OTHER)).read_text() == f"{other.model} on {other.hardware.gpu}: {len(other.decode)} decode cells\n"
    assert "(87 outputs rendered, 0 unchanged and reused)" in first  # the site's own 81, and the six cards

    assert "(0 outputs rendered" in build_site(content, out, jobs=2) and _rendered(tmp_path) == []

    path = content / "runs" / f"{CHANGED}.json"
    bundle = json.loads(path.read_text())
    bundle["decode"][0]["total_tok_s"] = 99999.9  # the run's peak now
    path.write_text(json.dumps(bundle))
    report = build_site(content, out, jobs=2)
    assert _rendered(tmp_path) == sorted([run_card(CHANGED), model_card(_model_slug(content, CHANGED))])
    assert (out / model_card(_model_slug(content, CHANGED))).read_text() == f"{CHANGED}: 99999.9 tok/s\n"
    # what the same change renders and reuses of the site's own kinds (tests/sitegen/test_build.py), and the cards
    assert "(40 outputs rendered, 47 unchanged and reused)" in report
    assert same_as_fresh(content, out)


def test_a_page_type_no_longer_registered_leaves_the_site(content: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "site"
    build_site(content, out)
    assert (out / run_card(OTHER)).is_file() and (out / "cards" / "models").is_dir()
    monkeypatch.setattr(registry, "KINDS", tuple(k for k in registry.KINDS if k not in (MODEL_CARDS, RUN_CARDS)))
    build_site(content, out)
    assert not (out / "cards").exists() and same_as_fresh(content, out)
