"""The CPU timer: warm-up, repetition bounds, and the summary statistics (CPU).

The timer reads clocks (wall and CPU) that these tests drive themselves, so what they assert
(which calls are timed, how many, for how long) holds however busy the machine is.
"""

from __future__ import annotations

import statistics

import pytest

from linbench.measure import timer
from linbench.measure.timer import Timing, time_cpu


class FakeClock:
    """Stands in for the ``time`` module inside the timer: time moves only when a test says."""

    def __init__(self) -> None:
        self.ns = 0
        self.cpu_ns = 0  # the process's CPU time: what its calls worked, not what they waited

    def perf_counter(self) -> float:
        return self.ns / 1e9

    def perf_counter_ns(self) -> int:
        return self.ns

    def process_time_ns(self) -> int:
        return self.cpu_ns

    def advance_ms(self, ms: float, waiting_ms: float = 0.0) -> None:
        """``ms`` of work, then ``waiting_ms`` waiting for a core (wall time only)."""
        self.ns += round((ms + waiting_ms) * 1e6)
        self.cpu_ns += round(ms * 1e6)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(timer, "time", fake)
    return fake


def test_repetitions_respect_min_and_max(clock: FakeClock) -> None:
    calls = []
    timing = time_cpu(lambda: calls.append(1), warmup_s=0.0, budget_s=10.0, min_reps=3, max_reps=7)
    assert timing.count == 7  # no time passes: the budget is never spent, max_reps stops it
    assert len(calls) == 7 + 1  # one warm-up call at least
    slow = time_cpu(lambda: clock.advance_ms(20), warmup_s=0.0, budget_s=0.0, min_reps=4, max_reps=100)
    assert slow.count == 4  # the budget is spent at once: min_reps stops it


def test_warm_up_runs_until_its_time_has_passed(clock: FakeClock) -> None:
    calls = []

    def call() -> None:
        calls.append(1)
        clock.advance_ms(30)

    timing = time_cpu(call, warmup_s=0.1, budget_s=0.0, min_reps=2, max_reps=2)
    assert len(calls) == 4 + 2  # 30, 60, 90, 120 ms of warm-up, then the two timed calls
    assert timing.count == 2


def test_samples_measure_the_closure_and_not_its_preparation(clock: FakeClock) -> None:
    timing = time_cpu(
        lambda: clock.advance_ms(10),
        before=lambda: clock.advance_ms(1000),  # untimed, and not counted against the budget
        warmup_s=0.0,
        budget_s=0.05,
        min_reps=3,
    )
    assert timing.samples_ms == (10.0,) * 5  # 50 ms of timed calls: the budget


def test_each_repetition_is_also_timed_in_cpu_time_which_waiting_does_not_add_to(clock: FakeClock) -> None:
    waits = iter([0.0, 0.0, 30.0, 0.0, 55.0])  # the warm-up call, then four timed ones, two preempted
    timing = time_cpu(lambda: clock.advance_ms(2.0, next(waits)), warmup_s=0.0, budget_s=0.0, min_reps=4)
    assert timing.samples_ms == (2.0, 32.0, 2.0, 57.0)
    assert timing.cpu_samples_ms == (2.0,) * 4 and timing.cpu_percentile_ms(20) == 2.0
    assert Timing((1.0,)).cpu_percentile_ms(20) is None  # a GPU timing has none


def test_summary_statistics() -> None:
    timing = Timing((5.0, 1.0, 3.0, 2.0, 4.0))
    assert timing.median_ms == 3.0
    assert timing.percentile_ms(0) == 1.0 and timing.percentile_ms(100) == 5.0
    assert timing.percentile_ms(20) == pytest.approx(1.8)
    assert Timing((7.0,)).percentile_ms(80) == 7.0


def test_a_paced_repetition_is_divided_by_the_reference_beside_it_so_a_slow_phase_divides_out(
    clock: FakeClock,
) -> None:
    # The core's phase: 1 in the first two calls, 2 (everything twice as slow) in the last two.
    phase = iter([1.0, 1.0, 2.0, 2.0, 2.0])
    current = {"phase": 1.0}
    paces = []

    def pace() -> None:
        current["phase"] = next(phase)
        paces.append(current["phase"])
        clock.advance_ms(0.1 * current["phase"])

    timing = time_cpu(
        lambda: clock.advance_ms(3.0 * current["phase"]),  # a warm-up call, then four timed ones
        warmup_s=0.0,
        budget_s=0.0,
        min_reps=4,
        pace=pace,
    )
    assert timing.cpu_samples_ms == pytest.approx((3.0, 3.0, 6.0, 6.0))  # the plain CPU times moved 2x
    # Each call over the mean of the reference right before and right after it: the phase
    # changed between the second call and the third, so the second sits between both paces.
    assert timing.paced_samples == pytest.approx((30.0, 3.0 / 0.15, 30.0, 30.0))
    assert timing.paced_percentile(50) == pytest.approx(30.0)
    assert len(paces) == 4 + 1  # the reference after one call is the one before the next
    assert timing.pace_ms == pytest.approx(statistics.median((0.1, 0.15, 0.2, 0.2)))


def test_an_unpaced_timing_has_no_paced_figure(clock: FakeClock) -> None:
    timing = time_cpu(lambda: clock.advance_ms(1.0), warmup_s=0.0, budget_s=0.0, min_reps=3)
    assert timing.paced_samples == () and timing.paced_percentile(20) is None and timing.pace_ms is None
