"""Which points the runner does not run, and the reasons it gives."""

from __future__ import annotations

from dataclasses import replace

import pytest

from linbench.measure.timing_policy import TimingPolicy
from linbench.runner.kinds import DECODE
from linbench.runner.policy import SkipPolicy
from linbench.shape import Shape
from linbench.sweep.points import Point

CPU = TimingPolicy.for_device("cpu")


def point(seq: int, impl: str = "naive", dim: int = 64, mode: str = "fwd") -> Point:
    return Point("cosine", impl, mode, True, "fp32", "cpu", Shape(1, 8, seq, dim, dim))


def test_points_at_least_as_large_as_an_oom_are_skipped_naming_it() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    policy.record(point(4096), {"status": "oom"})
    reason = policy.skip_reason(point(8192))
    assert reason is not None and "ran out of memory" in reason and "S4096" in reason
    assert policy.skip_reason(point(2048)) is None
    assert policy.skip_reason(point(8192, impl="chunked")) is None  # another impl's curve
    assert policy.skip_reason(point(8192, dim=32)) is None  # not larger along every axis


def test_timeouts_also_stand_for_larger_points() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    policy.record(point(4096), {"status": "timeout"})
    assert "timed out" in (policy.skip_reason(point(4096)) or "")


def test_a_crash_does_not_skip_larger_points() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    policy.record(point(4096), {"status": "crashed"})
    assert policy.skip_reason(point(8192)) is None


def test_extrapolation_uses_the_measured_exponent() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    policy.record(point(1024), {"status": "ok", "time_ms": 100.0})
    policy.record(point(2048), {"status": "ok", "time_ms": 400.0})  # exponent 2
    assert policy.predicted_call_s(point(8192)) == pytest.approx(6.4)
    assert policy.skip_reason(point(8192)) is None  # ~27 s of wall time
    reason = policy.skip_reason(point(65536))  # 409.6 s per call
    assert reason is not None and "predicted" in reason and "--timeout-s 120" in reason


def test_extrapolation_never_assumes_sublinear_growth() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    policy.record(point(1024), {"status": "ok", "time_ms": 100.0})
    policy.record(point(2048), {"status": "ok", "time_ms": 110.0})  # overhead-bound
    assert policy.predicted_call_s(point(4096)) == pytest.approx(0.22)


def test_one_length_extrapolates_quadratically_and_none_does_not_guess() -> None:
    policy = SkipPolicy(timeout_s=120, timing=CPU)
    assert policy.predicted_call_s(point(1024)) is None
    policy.record(point(1024), {"status": "ok", "time_ms": 1000.0})
    assert policy.predicted_call_s(point(4096)) == pytest.approx(16.0)
    other_shape = replace(point(4096), shape=Shape(2, 8, 4096, 64, 64))
    assert policy.predicted_call_s(other_shape) is None


def test_predicted_point_time_follows_the_timing_policy() -> None:
    # A 10 s call: the measured first call is its own warm-up and one of three repetitions.
    assert CPU.predicted_s(10.0) == pytest.approx(30.0)
    # Without that (a policy that never times its first call): the first call, then three.
    assert replace(CPU, long_first_call_timed=False).predicted_s(10.0) == pytest.approx(40.0)
    # A 1 ms call: warm-up budget, then the repetition cap.
    assert CPU.predicted_s(0.001) == pytest.approx(0.001 + 0.199 + 0.1)


def test_a_decode_step_is_extrapolated_linearly_from_a_single_context() -> None:
    """One measured context says nothing of the exponent; a decode step is at worst linear in
    the context (KV cache), so a recurrent decoder is not skipped at a far longer context."""
    policy = SkipPolicy(timeout_s=60, timing=TimingPolicy.for_decode(16), kind=DECODE)
    policy.record(point(2048, impl="recurrent", mode="decode"), {"status": "ok", "time_ms": 0.2})
    far = point(262144, impl="recurrent", mode="decode")
    assert policy.predicted_call_s(far) == pytest.approx(0.2e-3 * 128)
    assert policy.skip_reason(far) is None
