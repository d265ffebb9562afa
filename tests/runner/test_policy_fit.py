"""The skip predictor: a power law fitted to every measured length, with the measured noise
and a margin both ways. Synthetic measurements only; nothing is timed here."""

from __future__ import annotations

import math

import pytest

from linbench.measure.timing_policy import TimingPolicy
from linbench.runner.kinds import DECODE
from linbench.runner.policy import SkipPolicy
from linbench.shape import Shape
from linbench.sweep.points import Point

CPU = TimingPolicy.for_device("cpu")
DECODE_32 = TimingPolicy.for_decode(32)  # linbench decode's default --tokens


def point(seq: int, variant: str = "relu", impl: str = "reference", mode: str = "fwd") -> Point:
    return Point(variant, impl, mode, True, "fp32", "cpu", Shape(1, 8, seq, 64, 64))


def measured(median_ms: float, spread: float = 0.05) -> dict[str, object]:
    """An ok row whose p20 and p80 lie ``spread`` (relative) either side of the median."""
    return {
        "status": "ok",
        "time_ms": median_ms,
        "time_ms_p20": median_ms * (1 - spread),
        "time_ms_p80": median_ms * (1 + spread),
    }


def record_curve(policy: SkipPolicy, times_ms: dict[int, float], spread: float = 0.05, **where: str) -> None:
    for seq, ms in times_ms.items():
        policy.record(point(seq, **where), measured(ms, spread))


def test_one_noisy_point_does_not_skip_the_next_length() -> None:
    """The plugin example of docs/plugins.md: relu:reference and relu:fused are the same function. One
    noisy 8k point of reference (2x its true time) made the last-two-points rule extrapolate
    with s^3 and skip 16k, while fused ran there. A fit to every length does not."""
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    true = {1024: 31.0, 2048: 125.0, 4096: 500.0, 8192: 2000.0}
    record_curve(policy, true, impl="fused")
    record_curve(policy, true | {8192: 4000.0}, impl="reference")
    assert policy.skip_reason(point(16384, impl="fused")) is None
    assert policy.skip_reason(point(16384, impl="reference")) is None
    prediction = policy.prediction(point(16384, impl="reference"))
    assert prediction is not None and prediction.exponent < 2.5  # not the clamped s^3 of the noisy pair


def test_a_point_that_would_time_out_runs_on_probation_not_in_full() -> None:
    """linbench decode's default sweep: softmax:recompute's step measured 77 ms, 291 ms and
    (low, by chance) 0.80 s at 1k, 2k and 4k. The last pair said s^1.46, 75 s for the 8k
    point; it ran and was killed after the whole 120 s. Now its pessimistic prediction passes
    the limit, so it runs on probation: stopped after its first step if that step says so."""
    policy = SkipPolicy(timeout_s=120, timing=DECODE_32, kind=DECODE)
    where = {"variant": "softmax", "impl": "recompute", "mode": "decode"}
    record_curve(policy, {1024: 77.0, 2048: 291.0, 4096: 800.0}, **where)
    eight_k = point(8192, **where)
    assert policy.skip_reason(eight_k) is None  # the optimistic prediction fits the limit
    note = policy.probation(eight_k)
    assert note is not None and "--timeout-s 120" in note
    prediction = policy.prediction(eight_k)
    assert prediction is not None
    assert DECODE_32.predicted_s(prediction.high_s) > 120 > DECODE_32.predicted_s(prediction.low_s)


def test_a_point_well_inside_the_limit_is_not_on_probation() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    record_curve(policy, {1024: 1.0, 2048: 2.1, 4096: 4.0})
    assert policy.skip_reason(point(8192)) is None and policy.probation(point(8192)) is None


def test_the_fit_uses_every_measured_length_not_the_last_two() -> None:
    """s² with a slow middle point: least squares over all three keeps the exponent 2 (the
    last pair alone says s^1.68)."""
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    record_curve(policy, {1024: 100.0, 2048: 500.0, 4096: 1600.0})
    prediction = policy.prediction(point(8192))
    assert prediction is not None
    assert prediction.exponent == pytest.approx(2.0)
    assert prediction.points == 3
    geomean_s = (0.1 * 0.5 * 1.6) ** (1 / 3)  # the line passes through the points' centroid
    assert prediction.call_s == pytest.approx(geomean_s * 4**2)
    assert policy.predicted_call_s(point(8192)) == pytest.approx(prediction.call_s)


def test_a_curve_that_bends_is_extrapolated_from_its_last_points() -> None:
    """Overhead-bound short lengths, then growth: one line through all of it (s^0.97) would
    predict far too little; the last three lengths say s^1.71."""
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    times = {1024: 10.0, 2048: 11.0, 4096: 14.0, 8192: 40.0, 16384: 150.0}
    record_curve(policy, times)
    prediction = policy.prediction(point(32768))
    assert prediction is not None and prediction.points == 3
    tail = [(math.log(s), math.log(times[s])) for s in (4096, 8192, 16384)]
    slope = (tail[2][1] - tail[0][1]) / (tail[2][0] - tail[0][0])  # three evenly spaced points
    assert prediction.exponent == pytest.approx(slope)


def test_the_measured_spread_widens_the_margin() -> None:
    quiet = SkipPolicy(timeout_s=120, timing=CPU)
    noisy = SkipPolicy(timeout_s=120, timing=CPU)
    times = {1024: 100.0, 2048: 400.0, 4096: 1600.0}
    record_curve(quiet, times, spread=0.02)
    record_curve(noisy, times, spread=0.4)
    a, b = quiet.prediction(point(8192)), noisy.prediction(point(8192))
    assert a is not None and b is not None
    assert a.call_s == pytest.approx(b.call_s)
    assert b.low_s < a.low_s < a.call_s < a.high_s < b.high_s


def test_skipped_only_when_even_the_optimistic_prediction_passes_the_limit() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    # s² from 10 s at 4k: 40 s per call at 8k, 160 s for the point's four calls.
    record_curve(policy, {1024: 625.0, 2048: 2500.0, 4096: 10000.0})
    prediction = policy.prediction(point(8192))
    assert prediction is not None and CPU.predicted_s(prediction.call_s) > 120
    assert CPU.predicted_s(prediction.low_s) < 120
    assert policy.skip_reason(point(8192)) is None and policy.probation(point(8192)) is not None
    reason = policy.skip_reason(point(32768))  # 640 s per call, ~250 s at the very least
    assert reason is not None and "predicted" in reason and "--timeout-s 120" in reason


def test_exponents_stay_within_one_and_three() -> None:
    flat = SkipPolicy(timeout_s=120, timing=CPU)
    record_curve(flat, {1024: 100.0, 2048: 101.0, 4096: 102.0})
    steep = SkipPolicy(timeout_s=120, timing=CPU)
    record_curve(steep, {1024: 1.0, 2048: 20.0, 4096: 400.0})
    low, high = flat.prediction(point(8192)), steep.prediction(point(8192))
    assert low is not None and high is not None
    assert low.exponent == 1.0 and high.exponent == 3.0
    # A clamped law runs through the longest measured point, the one nearest the prediction.
    assert low.call_s == pytest.approx(0.204) and high.call_s == pytest.approx(3.2)
