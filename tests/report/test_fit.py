"""Fits recover known exponents from synthetic data; crossovers are where they should be."""

from __future__ import annotations

import math
import random

import pytest

from linbench.report.fit import crossover, fit_power_law

LENGTHS = [2**k for k in range(8, 17)]  # 256 .. 64k


@pytest.mark.parametrize("exponent", [1.0, 1.5, 2.0, 3.0])
def test_a_clean_power_law_is_recovered_exactly(exponent: float) -> None:
    fit = fit_power_law((s, 3e-6 * s**exponent) for s in LENGTHS)
    assert fit is not None
    assert fit.exponent == pytest.approx(exponent, abs=1e-9) and fit.r2 == pytest.approx(1.0)
    assert fit.points == len(LENGTHS)


@pytest.mark.parametrize(("exponent", "scale"), [(1.0, 1e-2), (2.0, 1e-5)])
def test_overhead_at_short_lengths_is_left_out(exponent: float, scale: float) -> None:
    # A fixed 5 ms cost swamps the short lengths; the scaling shows past it.
    points = [(s, 5.0 + scale * s**exponent) for s in LENGTHS]
    fit = fit_power_law(points)
    assert fit is not None and abs(fit.exponent - exponent) <= 0.05
    assert fit.points < len(LENGTHS)


@pytest.mark.parametrize("exponent", [1.0, 2.0])
def test_noise_of_a_few_percent_stays_within_five_hundredths(exponent: float) -> None:
    rng = random.Random(0)
    points = [(s, s**exponent * math.exp(rng.gauss(0, 0.03))) for s in LENGTHS]
    fit = fit_power_law(points)
    assert fit is not None and abs(fit.exponent - exponent) <= 0.05 and fit.r2 > 0.99


def test_too_few_or_unusable_points_give_no_fit() -> None:
    assert fit_power_law([]) is None
    assert fit_power_law([(1024, 1.0)]) is None
    assert fit_power_law([(1024, 1.0), (2048, 0.0), (4096, math.nan)]) is None


def test_crossover_is_where_the_candidate_stays_faster() -> None:
    softmax = {s: 1e-6 * s**2 for s in LENGTHS}
    linear = {s: 1e-3 * s for s in LENGTHS}  # equal at s = 1000
    assert crossover(linear, softmax) == 1024
    noisy = dict(linear) | {256: 1e-9}  # one lucky short point does not count
    assert crossover(noisy, softmax) == 1024
    assert crossover(softmax, linear) is None
    assert crossover({1024: 1.0}, {2048: 2.0}) is None
