"""The loop detector: four repeats and 4,096 characters of repetition, at any period."""

from __future__ import annotations

import random

import pytest

from runner.loops import LoopDetector


def _feed(text: str, chunk: int = 7) -> bool:
    detector = LoopDetector()
    return any(detector.feed(text[i : i + chunk]) for i in range(0, len(text), chunk))


def _random_text(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghij klmnop") for _ in range(n))


@pytest.mark.parametrize("period", [1, 2, 19, 500, 1024, 2000])
def test_loop_detected(period: int) -> None:
    unit = _random_text(period, seed=period)
    repeats = max(4, -(-4096 // period)) + 1
    assert _feed(_random_text(3000) + unit * repeats)


def test_loop_needs_four_repeats_and_4096_chars() -> None:
    assert not _feed(_random_text(20000))
    assert not _feed(_random_text(3000, 1) + _random_text(1500, 2) * 3)  # 3 repeats of 1500
    assert not _feed(_random_text(100, 3) + "abc" * 1300)  # 3900 characters of repetition
    assert _feed(_random_text(100, 3) + "abc" * 1400)
