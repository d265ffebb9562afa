"""The CPU timer: warm-up, repetition bounds, and the summary statistics."""

from __future__ import annotations

import time

import pytest

from linbench.measure.timer import Timing, time_cpu


def test_repetitions_respect_min_and_max() -> None:
    calls = []
    timing = time_cpu(lambda: calls.append(1), warmup_s=0.0, budget_s=10.0, min_reps=3, max_reps=7)
    assert timing.count == 7
    assert len(calls) == 7 + 1  # one warm-up call at least
    slow = time_cpu(lambda: time.sleep(0.02), warmup_s=0.0, budget_s=0.0, min_reps=4, max_reps=100)
    assert slow.count == 4


def test_samples_measure_the_closure() -> None:
    timing = time_cpu(lambda: time.sleep(0.01), warmup_s=0.0, budget_s=0.05, min_reps=3)
    assert all(10.0 <= s < 100.0 for s in timing.samples_ms)


def test_summary_statistics() -> None:
    timing = Timing((5.0, 1.0, 3.0, 2.0, 4.0))
    assert timing.median_ms == 3.0
    assert timing.percentile_ms(0) == 1.0 and timing.percentile_ms(100) == 5.0
    assert timing.percentile_ms(20) == pytest.approx(1.8)
    assert Timing((7.0,)).percentile_ms(80) == 7.0
