"""Otava's change points on series with the noise measured between runs (tests/history/runs.py's
BETWEEN_RUN_SIGMA, and a quieter 2%), over many seeds: what docs/history.md reports."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from linbench.history.detect import change_points

# Looked up, not imported: Otava's import (numpy, scipy) would cost every test worker's
# collection a second; the tests import it when they run.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)

SEEDS = range(100)
FLOOR = 0.05


def _series(seed: int, sigma: float, runs: int = 40) -> np.ndarray:
    return np.exp(np.random.default_rng(seed).normal(0.0, sigma, runs))


def _named(values: np.ndarray) -> list[int]:
    return [c.index for c in change_points(list(values), min_magnitude=FLOOR) if abs(c.ratio - 1) > FLOOR]


def test_unchanged_series_give_no_change_in_95_of_100_seeds() -> None:
    false = sum(bool(_named(_series(seed, 0.047))) for seed in SEEDS)
    assert false <= 5


@pytest.mark.parametrize(("sigma", "least"), [(0.02, 100), (0.047, 80)])
def test_a_ten_percent_step_after_run_20_is_found_at_run_21(sigma: float, least: int) -> None:
    found = 0
    for seed in SEEDS:
        values = _series(seed, sigma)
        values[20:] *= 1.10  # runs 21..40 (index 20 on) are slower
        found += any(abs(i - 20) <= 1 for i in _named(values))
    assert found >= least


def test_a_gradual_three_percent_drift_is_reported() -> None:
    reported = 0
    for seed in SEEDS:
        values = _series(seed, 0.047)
        values[30:] *= 1.03 ** np.arange(1, 11)  # the last 10 runs drift +3% a run
        changes = [c for c in change_points(list(values), min_magnitude=FLOOR) if c.ratio > 1 + FLOOR]
        reported += any(c.index >= 30 for c in changes)
    assert reported >= 95


def test_a_change_is_measured_between_its_neighbours() -> None:
    values = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.5, 1.52, 1.49, 1.5, 1.51, 1.48, 1.5]
    (change,) = change_points(values, min_magnitude=FLOOR)
    assert change.index == 7
    assert change.before_median == pytest.approx(1.0)
    assert change.after_median == pytest.approx(1.5)
    assert change.low <= change.ratio <= change.high
    assert change.regression
