"""`sitegen build`: bundles in, a whole static site out, atomically."""

from __future__ import annotations

import time
from pathlib import Path

from runner.schema import Bundle, encode_bundle
from sitegen import runview
from sitegen.loader import load_bundles
from sitegen.render import DEFAULT_TEMPLATES, make_environment, render_run_page
from sitegen.staging import Stage, staged
from sitegen.text_page import render_text
from sitegen.urls import run_dir


def build_site(content: Path, out: Path, templates: Path | None = None) -> str:
    """Build the site from content/ into out/ and return a one-line report."""
    started = time.perf_counter()
    templates = templates or DEFAULT_TEMPLATES
    bundles = [bundle for _, bundle in load_bundles(content / "runs")]
    env = make_environment(templates)
    context = {"run_count": len(bundles), "nav_pages": []}
    with staged(out) as stage:
        for bundle in bundles:
            write_run(stage, env, bundle, context)
        copy_static(stage, templates / "static")
    seconds = time.perf_counter() - started
    return f"built {len(bundles)} run pages into {out}/ in {seconds:.2f} s"


def write_run(stage: Stage, env, bundle: Bundle, context: dict) -> None:
    """A run's folder: index.html, index.txt and bundle.json."""
    view = runview.run_view(bundle)
    folder = run_dir(bundle.id)
    stage.write(folder + "index.html", render_run_page(env, bundle, view, context))
    stage.write(folder + "index.txt", render_text(view))
    stage.write(folder + "bundle.json", encode_bundle(bundle))


def copy_static(stage: Stage, static: Path) -> None:
    """Copy the stylesheet and scripts of the templates folder."""
    for source in sorted(static.rglob("*")):
        if source.is_file():
            stage.copy("static/" + source.relative_to(static).as_posix(), source)
