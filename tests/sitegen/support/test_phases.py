"""The phase timer: off by default, one line per phase of a build on stderr when SITEGEN_PHASES is set,
with its wall and CPU time and the process's resident memory as it ended."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.builders import ROOT
from tests.sample_site import write_content


def _build(content: Path, out: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sitegen", "build", "--content", str(content), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env})


def test_phases_are_timed_only_when_asked(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    quiet = _build(content, tmp_path / "one")
    assert quiet.returncode == 0 and "phase" not in quiet.stderr
    timed = _build(content, tmp_path / "two", SITEGEN_PHASES="1")
    assert timed.returncode == 0, timed.stderr
    lines = timed.stderr.splitlines()
    names = [line.split("  ")[0].removeprefix("phase ").strip() for line in lines]
    assert {"read cache", "scan bundles", "stage: adopt", "render pages", "listings (beside)", "stage: link, manifest", "total"} <= set(names)
    assert all(line.startswith("phase ") and line.endswith(" MB resident") for line in lines)
    # A Python process holding a built site's records has tens of MB resident, in the beside process too.
    resident = {name: float(line.split(" ms CPU")[1].split()[0]) for name, line in zip(names, lines)}
    assert resident["total"] >= resident["render pages"] > 10 and resident["listings (beside)"] > 10
