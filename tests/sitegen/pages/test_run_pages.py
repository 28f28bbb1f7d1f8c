"""Planning run folders and comparisons: a rebuild renders what its inputs changed, and a steady
run's pages keep their keys only while nothing they show changed."""

from __future__ import annotations

import json
from pathlib import Path

from runner.bundle.files import write_bundle
from sitegen.build import build_site
from sitegen.content.catalog import scan
from sitegen.pages.context import Site
from sitegen.pages.registry import renders
from sitegen.pages.render import DEFAULT_TEMPLATES, make_environment
from sitegen.pages.run_pages import Renderer
from sitegen.publish.swap import Stage
from tests.builders import make_bundle, same_as_fresh
from tests.sample_site import LING, MIMO, built_sample

BASELINE, PARTNER = MIMO, LING  # the sample's one comparison


def test_a_partners_new_title_reaches_the_run_page_that_lists_it(tmp_path: Path) -> None:
    """The VRAM is in a run's title but not in what pairs runs: the pairs stay, the partner's page changes."""
    content, out = built_sample(tmp_path)
    path = content / "runs" / f"{PARTNER}.json"
    bundle = json.loads(path.read_text())
    bundle["hardware"]["vram_per_gpu_gb"] = 777
    path.write_text(json.dumps(bundle))
    build_site(content, out)
    assert "777GB" in (out / "runs" / BASELINE / "index.html").read_text()
    assert same_as_fresh(content, out)


def test_a_new_content_page_reaches_every_run_page(tmp_path: Path) -> None:
    content, out = built_sample(tmp_path)
    (content / "pages" / "30-faq.md").write_text("# FAQ\n\nQuestions people ask.\n")
    build_site(content, out)
    for page in (out / "runs").glob("*/index.html"):
        assert "FAQ" in page.read_text()
    assert same_as_fresh(content, out)


def test_a_bundle_is_read_again_unchecked_only_while_its_bytes_are_those_the_scan_found_clean(tmp_path: Path) -> None:
    """The scan marks a bundle with nothing to redact clean; the renderer decodes those same bytes alone,
    and scrubs any bundle that holds a secret, or whose file changed after the scan, as every read does."""
    runs = tmp_path / "runs"
    runs.mkdir()
    write_bundle(runs / "clean.json", make_bundle("clean"))
    write_bundle(runs / "secret.json", make_bundle("secret", launch_command="vllm serve m --api-key sk-live-0123456789abcdef"))
    entries = scan(runs, {})
    assert {e.id: e.clean for e in entries} == {"clean": True, "secret": False}
    site = Site(runs=runs, entries=entries, pages=[], pairs=[], env=make_environment(DEFAULT_TEMPLATES), code="test")
    # Changed after the scan: its bytes no longer match the fingerprint the scan found clean.
    write_bundle(runs / "clean.json", make_bundle("clean", launch_command="vllm serve m --api-key sk-live-0123456789abcdef"))
    renderer = Renderer(site, Stage(tmp_path / "stage"), renders())
    for name in ("clean", "secret"):
        bundle = renderer.load(str(runs / f"{name}.json")).bundle
        assert bundle.launch_command == "vllm serve m --api-key <redacted>"
    write_bundle(runs / "clean.json", make_bundle("clean"))  # the scanned bytes again
    assert Renderer(site, Stage(tmp_path / "stage"), renders()).load(str(runs / "clean.json")).bundle == make_bundle("clean")
