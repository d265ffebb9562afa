"""Fits recover known exponents from synthetic data; crossovers are where they should be."""

from __future__ import annotations

import math
import random

import pytest

from linbench.report.fit import FLAT, NONE, POWER, TWO_POINTS, crossover, fit_power_law

LENGTHS = [2**k for k in range(8, 17)]  # 256 .. 64k


@pytest.mark.parametrize("exponent", [1.0, 1.5, 2.0, 3.0])
def test_a_clean_power_law_is_recovered_exactly(exponent: float) -> None:
    fit = fit_power_law((s, 3e-6 * s**exponent) for s in LENGTHS)
    assert fit is not None
    assert fit.exponent == pytest.approx(exponent, abs=1e-9) and fit.r2 == pytest.approx(1.0)
    assert fit.points == len(LENGTHS) and fit.law == POWER and fit.left_out == 0


@pytest.mark.parametrize(("exponent", "scale"), [(1.0, 1e-2), (2.0, 1e-5)])
def test_overhead_at_short_lengths_is_left_out(exponent: float, scale: float) -> None:
    # A fixed 5 ms cost swamps the short lengths; the scaling shows past it.
    points = [(s, 5.0 + scale * s**exponent) for s in LENGTHS]
    fit = fit_power_law(points)
    assert fit is not None and fit.law == POWER and abs(fit.exponent - exponent) <= 0.05
    assert fit.points < len(LENGTHS) and fit.left_out == len(LENGTHS) - fit.points
    assert fit.x_min == LENGTHS[fit.left_out]


@pytest.mark.parametrize("exponent", [1.0, 2.0])
def test_noise_of_a_few_percent_stays_within_five_hundredths(exponent: float) -> None:
    rng = random.Random(0)
    points = [(s, s**exponent * math.exp(rng.gauss(0, 0.03))) for s in LENGTHS]
    fit = fit_power_law(points)
    assert fit is not None and fit.law == POWER and abs(fit.exponent - exponent) <= 0.05 and fit.r2 > 0.99


def test_too_few_or_unusable_points_give_no_fit() -> None:
    assert fit_power_law([]) is None
    assert fit_power_law([(1024, 1.0)]) is None
    assert fit_power_law([(1024, 1.0), (2048, 0.0), (4096, math.nan)]) is None


def test_flat_then_linear_gives_the_linear_exponent_from_where_it_starts() -> None:
    # Launch-bound: 0.6 ms up to 8k, then linear. One line through all of it says s^0.5.
    points = [(s, max(0.6, 0.6 * s / 8192)) for s in LENGTHS]
    fit = fit_power_law(points)
    assert fit is not None and fit.law == POWER
    assert fit.exponent == pytest.approx(1.0, abs=1e-9) and (fit.x_min, fit.x_max) == (8192, 65536)
    assert fit.left_out == 5


def test_the_gpu_kernel_that_was_reported_as_s_to_the_0_28_starts_at_16k() -> None:
    # cosine:kernel, bf16 fwd causal B1 H8 D64 on an H100 (2026-11-22): launch-bound to 8k.
    times = [0.518, 0.783, 0.802, 0.563, 0.756, 1.338, 2.313]
    fit = fit_power_law(zip([1024 * 2**n for n in range(7)], times, strict=True))
    assert fit is not None and fit.law == POWER and (fit.x_min, fit.points) == (16384, 3)
    assert 0.75 < fit.exponent < 0.85 and fit.r2 > 0.99


@pytest.mark.parametrize("level", [1e-3, 0.7])
def test_flat_data_is_flat_not_a_power_law(level: float) -> None:
    exact = fit_power_law((s, level) for s in LENGTHS)
    assert exact is not None and exact.law == FLAT and exact.exponent == 0.0
    rng = random.Random(1)
    noisy = fit_power_law((s, level * math.exp(rng.gauss(0, 0.3))) for s in LENGTHS)
    assert noisy is not None and noisy.law == FLAT and abs(noisy.exponent) < 0.13


@pytest.mark.parametrize(("sigma", "count"), [(0.03, 3), (0.1, 5), (0.1, 9), (0.3, 5), (0.3, 9), (0.3, 11)])
def test_pure_noise_is_almost_never_called_a_power_law(sigma: float, count: int) -> None:
    # Three points of noise line up with R² ≥ 0.98 in ~9% of draws; the law must also rise
    # clear of the points it leaves out, which noise rarely does.
    found = 0
    for seed in range(400):
        rng = random.Random(seed)
        fit = fit_power_law((1024 * 2**n, math.exp(rng.gauss(0, sigma))) for n in range(count))
        assert fit is not None and fit.law in (POWER, FLAT, NONE)
        found += fit.law == POWER
    assert found <= 2  # 0.5%


def test_a_bad_fit_is_reported_as_no_power_law() -> None:
    zigzag = [(s, 1.0 if n % 2 else 8.0) for n, s in enumerate(LENGTHS)]
    rising_badly = [(s, y) for s, y in zip(LENGTHS, [1, 9, 2, 30, 3, 80, 40, 200, 90], strict=True)]
    for points in (zigzag, rising_badly):
        fit = fit_power_law(points)
        assert fit is not None and fit.law == NONE and not fit.is_law and fit.r2 < 0.98
        assert (fit.points, fit.x_min, fit.x_max) == (len(LENGTHS), LENGTHS[0], LENGTHS[-1])


def test_two_points_are_marked_as_two_points() -> None:
    fit = fit_power_law([(1024, 1.0), (2048, 2.0)])
    assert fit is not None and fit.law == TWO_POINTS and not fit.is_law and fit.exponent == pytest.approx(1.0)


def test_crossover_is_where_the_candidate_stays_faster() -> None:
    softmax = {s: 1e-6 * s**2 for s in LENGTHS}
    linear = {s: 1e-3 * s for s in LENGTHS}  # equal at s = 1000
    assert crossover(linear, softmax) == 1024
    noisy = dict(linear) | {256: 1e-9}  # one lucky short point does not count
    assert crossover(noisy, softmax) == 1024
    assert crossover(softmax, linear) is None
    assert crossover({1024: 1.0}, {2048: 2.0}) is None
