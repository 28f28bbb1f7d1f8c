"""`sitegen check` on every honest bundle the project has: no false alarm, and the verdict lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from tests.builders import FIXTURES, ROOT, SEEDS, sitegen_check

PEERS = FIXTURES / "peers"
# Each group imports as `sitegen import` would: a folder's files, or the files given, in one call.
HONEST: dict[str, list[Path]] = {
    "seeds": SEEDS,
    "llm-inference-bench": [FIXTURES / "llm-inference-bench-0.4.18.json"],
    "vllm-sweep": [PEERS / "vllm" / "sweep"],
    "vllm-held-back": sorted((PEERS / "vllm" / "held-back").glob("*.json")),
    "vllm-errors": [PEERS / "vllm" / "errors.json"],
    "guidellm-sweep": sorted((PEERS / "guidellm" / "sweep").glob("*.json")),
    "guidellm-held-back": sorted((PEERS / "guidellm" / "held-back").glob("*.json")),
    "guidellm-errors": [PEERS / "guidellm" / "errors.json"],
    "guidellm-none-completed": [PEERS / "guidellm-none-completed.json"],
    "aiperf-sweep": [PEERS / "aiperf" / "sweep"],
    "aiperf-held-back": [PEERS / "aiperf" / "held-back"],
    "aiperf-errors": [PEERS / "aiperf" / "errors"],
}


def _all_consistent(checked: object, count: int) -> None:
    assert (checked.exit_code, checked.errors) == (0, []), checked
    assert len(checked.verdicts) == count + 1
    assert all(": consistent (" in line for line in checked.verdicts[:-1]), checked.verdicts
    assert checked.verdicts[-1] == f"{count} bundle{'s' if count > 1 else ''} checked: {count} consistent"


def _committed_runs() -> int:
    """How many runs the repository's content/ holds."""
    return len(list((ROOT / "content" / "runs").glob("*.json")))


def test_the_committed_runs_are_consistent() -> None:
    _all_consistent(sitegen_check(ROOT / "content"), _committed_runs())


@pytest.mark.parametrize("group", HONEST)
def test_every_seed_and_peer_import_is_consistent(group: str, tmp_path: Path) -> None:
    written, errors = import_files(HONEST[group], tmp_path / "runs", ImportOptions())
    assert errors == [] and written
    _all_consistent(sitegen_check(tmp_path), len(written))


def test_runs_the_runner_measured_are_consistent_and_recompute(measured_run: Path, repeated_run: Path) -> None:
    for run in (measured_run, repeated_run):  # one at a time: measured in the same minute, they share an id
        checked = sitegen_check(run)
        _all_consistent(checked, 1)
        assert "raw records recompute every cell" in checked.verdicts[0]


def test_no_bundle_is_no_failure(tmp_path: Path) -> None:
    checked = sitegen_check(tmp_path)
    assert (checked.exit_code, checked.errors, checked.verdicts) == (0, [], ["0 bundles checked"])


@pytest.mark.llama
def test_a_run_measured_from_llama_cpp_is_consistent_and_recomputes(tmp_path: Path) -> None:
    import asyncio
    import io

    from runner.measure import measure
    from runner.options import Options
    from runner.progress import Progress
    from tests.engines.llama_server import make_tiny_gguf, start_llama_server

    server = start_llama_server(make_tiny_gguf(tmp_path / "tiny.gguf"), tmp_path / "server.log")
    out = tmp_path / "runs" / "llama.json"
    try:
        asyncio.run(measure(Options(base_url=server.base_url, out=out, contexts=[300], prefill_contexts=[300],
                                    concurrency=[1, 2, 8], duration=1.5, max_output=64), progress=Progress(0, io.StringIO())))
    finally:
        server.process.terminate()
        server.process.wait(timeout=10)
    checked = sitegen_check(out)
    _all_consistent(checked, 1)
    assert "raw records recompute every cell" in checked.verdicts[0]


def test_the_documented_workflow_passes_on_this_repositorys_content() -> None:
    workflow = (ROOT / "docs" / "checking.md").read_text().split("```yaml\n")[1].split("```")[0]
    [command] = [line.split("run: ", 1)[1] for line in workflow.splitlines() if line.strip().startswith("run: sitegen check")]
    _all_consistent(sitegen_check(*[ROOT / word for word in command.split()[2:]]), _committed_runs())
