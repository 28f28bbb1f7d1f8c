"""The planned matrix: default contexts as the seeds have them, and cells over capacity."""

from __future__ import annotations

from runner.plan import default_contexts, default_prefill_contexts, over_capacity


def test_default_contexts_match_the_seeds() -> None:
    contexts = default_contexts(1048576, 4096)
    assert [c // 1024 for c in contexts] == [8, 16, 32, 64, 128, 256, 512, 1019]
    assert default_contexts(262144, 4096)[-1] == 251 * 1024
    assert default_prefill_contexts(contexts, 1048576)[-1] == 1048576
    assert default_contexts(4096, 1024) == [2048]


def test_over_capacity() -> None:
    assert over_capacity(8192, 128, 4096, 1_000_000)
    assert not over_capacity(8192, 64, 4096, 1_000_000)
    assert not over_capacity(8192, 128, 4096, None)
