"""A run page shows a Distorted cell like the other statuses, its reason and the measuring machine outside #matrix."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from sitegen.build import build_site
from tests.sample_site import MIMO, write_content


def test_distorted_cell_legend_reason_and_machine(tmp_path: Path) -> None:
    content = write_content(tmp_path)
    path = content / "runs" / f"{MIMO}.json"
    bundle = json.loads(path.read_text())
    cell = next(c for c in bundle["decode"] if c["status"] == "Valid")
    cell["status"] = "Distorted"
    cell["distortion"] = "TTFT 40.0 ms against the server's 10.0 ms <script>"
    queued = next(c for c in bundle["decode"] if c["status"] == "Requests queued")
    queued["distortion"] = "the client counted 960 tokens, the server generated 1,000 (-4.0%)"
    bundle["hardware"]["client"] = {"cpu": "Intel(R) Xeon(R) Processor", "cores": 2, "memory_gb": 23.5, "nice": -10, "session_nice": -10}
    bundle["hardware"]["gpu_driver"] = "570.86.15"
    bundle["hardware"]["cuda_version"] = "12.8"
    path.write_text(json.dumps(bundle))
    out = tmp_path / "site"
    build_site(content, out)
    html = (out / "runs" / MIMO / "index.html").read_text()
    matrix, after = html.split('<article id="matrix"', 1)[1].split("</article>", 1)
    assert '<p class="legend">Distorted: the client&#39;s timings disagreed' in matrix
    distorted = re.search(r'<td class="cell status-distorted"([^>]*)>(.*?)</td>', matrix)
    assert distorted and "--heat" not in distorted.group(1) and "&lt;script&gt;" in distorted.group(1)
    assert '<span class="note">Distorted</span>' in distorted.group(2) and 'class="value"' in distorted.group(2)
    assert "Where the figures disagree with the server" in after and "against the server&#39;s 10.0 ms &lt;script&gt;" in after
    assert "(Requests queued): the client counted 960 tokens" in after
    assert "Measuring machine" in after and "Intel(R) Xeon(R) Processor" in after and "570.86.15" in after
    assert "nice -10, session nice -10" in after
    assert "Measuring machine" not in matrix and "570.86.15" not in matrix
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO((out / "runs.csv").read_text()))}
    assert rows[MIMO]["cells_distorted"] == "1"
