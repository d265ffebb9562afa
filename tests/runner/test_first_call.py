"""A CPU point's first full-size call (device: cpu): a long one is timed as a repetition when it
was steady, and so is a warm worker's later point's of a curve, which adds no warm-up; the profiled
call that counts allocations is a warm-up call where the point warms up, else a timed
repetition where the profiler's cost is negligible (a call of few ops), else one call more.

The impl moves a clock these tests drive (each call "takes" the milliseconds its script says),
and the timer and the measurement read that clock, so what is asserted (which calls are
timed, how many calls run) holds however busy the machine is. The profiler is torch's own: how
many events it records of a call (the impl's ``ops`` small additions) is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
import torch

from linbench.measure import timer
from linbench.measure.allocations import ProfiledCall
from linbench.measure.timing_policy import TimingPolicy
from linbench.results.processes import ProcessResult
from linbench.runner import execute
from linbench.runner.execute import FIRST_CALL_SLACK, run_measure
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import RUN
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.variants.registry import Impl, Variant, register_variant, unregister_variant

SCRIPTED = "scripted_for_first_call_tests"
CPU = TimingPolicy.for_device("cpu")  # 0.2 s warm-up, 1 s budget, 3 repetitions at least


class ScriptedClock:
    """The ``time`` module of the timer and of the measurement: each impl call advances it by
    the next duration of its script (then by ``rest_ms`` once the script is spent)."""

    def __init__(self) -> None:
        self.ns = 0
        self.script: list[float] = []
        self.rest_ms = 1.0
        self.calls = 0
        self.ops = 0  # small torch ops each call makes besides its copy (events for the profiler)

    def perf_counter(self) -> float:
        return self.ns / 1e9

    def perf_counter_ns(self) -> int:
        return self.ns

    def process_time_ns(self) -> int:  # every scripted millisecond is work
        return self.ns

    def call(self) -> None:
        self.calls += 1
        self.ns += round((self.script.pop(0) if self.script else self.rest_ms) * 1e6)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedClock]:
    fake = ScriptedClock()
    monkeypatch.setattr(timer, "time", fake)
    monkeypatch.setattr(execute, "time", fake)

    def scripted(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
        fake.call()
        out = v.clone()
        for _ in range(fake.ops):
            out = out + 0
        return out

    register_variant(
        Variant(
            name=SCRIPTED,
            summary="v, in scripted time",
            impl_list=(Impl("scripted", scripted, "takes what its script says", "O(1)", "O(1)"),),
            reference="scripted",
            param_specs=(),
            flop_formula=lambda *args: 0.0,
            time_complexity="O(1)",
            memory_complexity="O(1)",
        )
    )
    yield fake
    unregister_variant(SCRIPTED)


def _result(
    clock: ScriptedClock,
    first_ms: float,
    later_ms: float,
    *,
    warm_curve: bool = False,
    timing: TimingPolicy = CPU,
    then_ms: tuple[float, ...] = (),
) -> ProcessResult:
    """What a point whose first full-size call takes ``first_ms``, the next ones ``then_ms``
    and every later one ``later_ms`` measured (the tiny warm-up call before them takes 1 ms)."""
    clock.script, clock.rest_ms = [1.0, first_ms, *then_ms], later_ms
    point = Point(SCRIPTED, "scripted", "fwd", True, "fp32", "cpu", Shape(1, 1, 32, 4, 4))
    result = run_measure(Task(job="measure", point=point, timing=timing, kind=RUN), warm_curve=warm_curve)
    assert result.status == "ok", result.error
    return result


def _measure(
    clock: ScriptedClock, first_ms: float, later_ms: float, *, warm_curve: bool = False, timing: TimingPolicy = CPU
) -> tuple[float, ...]:
    """The samples of such a point."""
    return _result(clock, first_ms, later_ms, warm_curve=warm_curve, timing=timing).samples_ms


def test_a_long_steady_first_call_is_one_of_the_repetitions(clock: ScriptedClock) -> None:
    result = _result(clock, first_ms=300.0, later_ms=300.0)
    # Its own warm-up, and the first of the repetitions: 1 s of budget is 300 ms + 3 more.
    assert result.samples_ms == (300.0, 300.0, 300.0, 300.0)
    # The tiny call, then only timed calls: the profiled one (a copy: a few events, far under
    # 0.5% of 300 ms) is one of the repetitions, not a call more.
    assert clock.calls == 1 + 4
    assert result.alloc_call_timed is True and result.alloc_peak_bytes


def test_a_long_calls_profiled_call_of_many_ops_is_one_call_more_untimed(clock: ScriptedClock) -> None:
    """300 small ops: thousands of events, whose bounded profiler cost (ProfiledCall) passes
    0.5% of the call's 300 ms, so its time is no repetition."""
    clock.ops = 300
    result = _result(clock, first_ms=300.0, later_ms=300.0)
    assert result.samples_ms == (300.0, 300.0, 300.0, 300.0)
    assert clock.calls == 1 + 4 + 1
    assert result.alloc_call_timed is False and result.alloc_peak_bytes


def test_a_long_first_call_slower_than_its_slack_is_replaced_by_one_more_repetition(clock: ScriptedClock) -> None:
    slow_first = 300.0 * (1 + FIRST_CALL_SLACK) * 1.05
    samples = _measure(clock, first_ms=slow_first, later_ms=300.0)
    assert slow_first not in samples
    assert samples == (300.0, 300.0, 300.0, 300.0)  # the point keeps its count


def test_a_short_first_call_is_warm_up_and_the_warm_up_time_runs_out(clock: ScriptedClock) -> None:
    samples = _measure(clock, first_ms=60.0, later_ms=50.0)
    assert 60.0 not in samples
    # After the 60 ms first call, 140 ms of warm-up remain: three more 50 ms calls untimed,
    # the first of them the one that counts allocations (no call more for it).
    assert clock.calls == 1 + 1 + 3 + len(samples)


def test_a_warm_workers_later_point_of_a_curve_has_no_warm_up_beyond_its_first_call(clock: ScriptedClock) -> None:
    result = _result(clock, first_ms=60.0, later_ms=50.0, warm_curve=True)
    # The first call, more than 10% slower than the rest, was not yet steady: dropped, and one
    # more repetition timed in its place.
    assert 60.0 not in result.samples_ms
    # The profiled call (a few events in 50 ms) is the first of the repetitions.
    assert clock.calls == 1 + 1 + len(result.samples_ms)
    assert result.alloc_call_timed is True


def test_a_warm_workers_steady_first_call_is_a_repetition_however_short(clock: ScriptedClock) -> None:
    """Its worker warm from the curve, a point has no warm-up to do: its 52 ms first call, within
    10% of the later 50 ms ones, is timed as a repetition (cold, it would be warm-up)."""
    result = _result(clock, first_ms=52.0, later_ms=50.0, warm_curve=True)
    assert result.samples_ms[0] == 52.0 and clock.calls == 1 + len(result.samples_ms)
    clock.calls = 0
    cold = _result(clock, first_ms=52.0, later_ms=50.0)
    assert 52.0 not in cold.samples_ms


def test_a_short_calls_profiled_call_of_many_ops_is_untimed_in_a_warm_worker(clock: ScriptedClock) -> None:
    clock.ops = 300
    result = _result(clock, first_ms=60.0, later_ms=50.0, warm_curve=True)
    assert clock.calls == 1 + 1 + 1 + len(result.samples_ms)
    assert result.alloc_call_timed is False


def test_a_first_call_shorter_than_a_longer_warm_up_asked_for_is_warm_up(clock: ScriptedClock) -> None:
    # --warmup-s 0.5: a 300 ms first call leaves 200 ms of warm-up, so it is not timed.
    samples = _measure(clock, first_ms=300.0, later_ms=250.0, timing=replace(CPU, warmup_s=0.5))
    assert 300.0 not in samples
    assert clock.calls == 1 + 1 + 1 + len(samples)  # one more call of warm-up, which counts allocations


def test_the_call_that_counts_allocations_comes_right_after_the_measured_call(
    clock: ScriptedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the point warms up, the profiled call is its first warm-up call, untimed; where it
    does not (a warm worker's later point), it is the first of the repetitions, its own time
    (45 ms here) the first sample."""
    profiled_at: list[int] = []
    real = execute.profiled_call

    def profiled(call: Callable[[], object]) -> ProfiledCall:
        profiled_at.append(clock.calls)
        return real(call)

    monkeypatch.setattr(execute, "profiled_call", profiled)
    result = _result(clock, first_ms=60.0, later_ms=50.0, then_ms=(45.0,))
    assert profiled_at == [2]  # right after the tiny call and the measured first call
    assert 45.0 not in result.samples_ms and result.alloc_call_timed is False
    assert len(result.samples_ms) == clock.calls - 1 - 1 - 3  # the warm-up: the profiled call and two more
    profiled_at.clear()
    clock.calls = 0
    result = _result(clock, first_ms=60.0, later_ms=50.0, then_ms=(45.0,), warm_curve=True)
    assert profiled_at == [2]
    assert result.samples_ms[0] == 45.0 and result.alloc_call_timed is True
    assert len(result.samples_ms) == clock.calls - 1 - 1
