"""Wall-clock timing on CPU: warm-up and repetition by time budget, median and spread.

Each repetition is also timed in the process's CPU time (all its threads, the kernel's
CLOCK_PROCESS_CPUTIME_ID): the work the call did, to which a preemption by another process adds
nothing, where the wall clock counts every millisecond the call waited for a core. With one
torch thread the two agree on a quiet machine; on a busy one the CPU time is what the gate can
still judge (linbench/gate/statistic.py). The GPU timer (cuda_timer.py) runs the same warm-up and
timing loop (``warm_up``, ``repeat``) with CUDA events for its clock.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Protocol, TypeVar

# What a clock reads around one call: the CPU clock its milliseconds, CUDA a pair of events.
Reading = TypeVar("Reading")


@dataclass(frozen=True)
class Timing:
    """Raw samples of one timed closure, in milliseconds, and their summary."""

    samples_ms: tuple[float, ...]
    # Each repetition's process CPU time, in the same order (empty where none was taken: CUDA).
    cpu_samples_ms: tuple[float, ...] = ()
    # Paced repetitions (measure/pace.py): the mean CPU time of the reference call right before
    # and right after each, and the call's CPU time over it; empty where none was paced. Not aligned with
    # the samples above: a first or profiled call timed apart has no reference beside it.
    pace_samples_ms: tuple[float, ...] = ()
    paced_samples: tuple[float, ...] = ()

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    def percentile_ms(self, pct: float) -> float:
        """Linear-interpolated percentile (0–100) of the samples."""
        return _percentile(self.samples_ms, pct)

    def cpu_percentile_ms(self, pct: float) -> float | None:
        """The same percentile of the repetitions' CPU times (None where none was taken)."""
        return _percentile(self.cpu_samples_ms, pct) if self.cpu_samples_ms else None

    def paced_percentile(self, pct: float) -> float | None:
        """The same percentile of the paced repetitions' CPU time over the reference's (None
        where none was paced)."""
        return _percentile(self.paced_samples, pct) if self.paced_samples else None

    @property
    def pace_ms(self) -> float | None:
        """The reference call's median CPU time (None where none was paced)."""
        return statistics.median(self.pace_samples_ms) if self.pace_samples_ms else None

    def then(self, later: Timing) -> Timing:
        """These repetitions and ``later``'s as one run, in the order they were timed."""
        return Timing(
            (*self.samples_ms, *later.samples_ms),
            (*self.cpu_samples_ms, *later.cpu_samples_ms),
            (*self.pace_samples_ms, *later.pace_samples_ms),
            (*self.paced_samples, *later.paced_samples),
        )

    @property
    def count(self) -> int:
        return len(self.samples_ms)


class Clock(Protocol[Reading]):
    """How a repetition is timed: ``around(fn)`` runs ``fn`` between two readings of the clock,
    ``spent_ms`` is what such a reading says at once (a clock read only later, as CUDA events
    are after a synchronize, says 0), and ``timing`` turns every reading into the samples."""

    def around(self, fn: Callable[[], object]) -> Reading: ...

    def spent_ms(self, reading: Reading) -> float: ...

    def timing(self, readings: list[Reading]) -> Timing: ...


def warm_up(
    fn: Callable[[], object],
    prepare: Callable[[], object],
    warmup_s: float,
    min_calls: int,
    settle: Callable[[], object] = lambda: None,
) -> tuple[int, float]:
    """Run ``prepare`` and ``fn`` (then ``settle``: a GPU waits for the call there) until
    ``warmup_s`` has passed and at least ``min_calls`` times; the calls made and their seconds."""
    calls, start = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < warmup_s:
        prepare()
        fn()
        settle()
        calls += 1
    return calls, time.perf_counter() - start


def repeat(
    fn: Callable[[], object],
    prepare: Callable[[], object],
    clock: Clock[Reading],
    *,
    budget_s: float,
    min_reps: int,
    max_reps: int,
) -> Timing:
    """The timing loop of both timers: ``prepare`` untimed, then ``fn`` timed by ``clock``, until
    ``budget_s`` of timed calls have passed, but never fewer than ``min_reps`` nor more than
    ``max_reps`` repetitions (a clock read only later times exactly ``min_reps == max_reps``)."""
    return clock.timing(readings(fn, prepare, clock, budget_s=budget_s, min_reps=min_reps, max_reps=max_reps))


def readings(
    fn: Callable[[], object],
    prepare: Callable[[], object],
    clock: Clock[Reading],
    *,
    budget_s: float,
    min_reps: int,
    max_reps: int,
) -> list[Reading]:
    """``repeat``'s loop alone: the clock's readings around each call, not yet made samples."""
    taken: list[Reading] = []
    timed_ms = 0.0
    while len(taken) < max_reps and (len(taken) < min_reps or timed_ms < budget_s * 1e3):
        prepare()
        taken.append(clock.around(fn))
        timed_ms += clock.spent_ms(taken[-1])
    return taken


# A CPU reading: the call's wall and CPU milliseconds, and the mean of the reference call's CPU
# milliseconds right before and right after it (None where the clock has no pace).
CpuReading = tuple[float, float, float | None]


class CpuClock:
    """The wall clock and the process's CPU time around each call, read at once, in ms; with a
    ``pace`` (measure/pace.py), the machine's pace beside each call: the mean CPU time of that
    reference call right before it and right after it (the one after a call is the one before
    the next, so a call costs one reference more, not two)."""

    def __init__(self, pace: Callable[[], object] | None = None) -> None:
        self._pace = pace
        self._last_pace_ms: float | None = None

    def around(self, fn: Callable[[], object]) -> CpuReading:
        before = self._last_pace_ms if self._last_pace_ms is not None else self._pace_ms()
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        fn()
        t1, c1 = time.perf_counter_ns(), time.process_time_ns()
        after = self._last_pace_ms = self._pace_ms()
        pace_ms = None if before is None or after is None else (before + after) / 2
        return (t1 - t0) / 1e6, (c1 - c0) / 1e6, pace_ms

    def _pace_ms(self) -> float | None:
        if self._pace is None:
            return None
        start = time.process_time_ns()
        self._pace()
        return (time.process_time_ns() - start) / 1e6

    def spent_ms(self, reading: CpuReading) -> float:
        return reading[0]

    def timing(self, readings: list[CpuReading]) -> Timing:
        # A reference too short for the CPU clock to see (0) cannot divide: that repetition
        # keeps its times and is left out of the paced ones.
        paces = [(pace, cpu) for _, cpu, pace in readings if pace is not None and pace > 0]
        return Timing(
            tuple(wall for wall, _, _ in readings),
            tuple(cpu for _, cpu, _ in readings),
            tuple(pace for pace, _ in paces),
            tuple(cpu / pace for pace, cpu in paces),
        )


def time_cpu(
    fn: Callable[[], object],
    *,
    before: Callable[[], object] | None = None,
    warmup_s: float = 0.25,
    min_warmup_calls: int = 1,
    budget_s: float = 2.0,
    min_reps: int = 3,
    max_reps: int = 200,
    timed_window: AbstractContextManager[object] | None = None,
    pace: Callable[[], object] | None = None,
) -> Timing:
    """Time ``fn`` with a monotonic clock.

    Warm-up runs ``fn`` until ``warmup_s`` has passed and at least ``min_warmup_calls``
    times, so lazy initialisation and allocator growth are not timed (a caller that has
    already run ``fn`` once may pass 0). Then it repeats until ``budget_s`` of timed calls
    have passed, but never fewer than ``min_reps`` nor more than ``max_reps`` times: short ops
    get many samples, long ones stay affordable. ``before`` runs untimed ahead of every call (a
    backward timing builds its forward graph there; a CPU call gets fresh buffers) and does
    not count against the budget, which is of timed work. ``timed_window`` is entered around
    the repetitions after the warm-up (a reading of what else the machine did meanwhile).
    ``pace``, a reference call (measure/pace.py), is timed before the first repetition and after
    each, outside the budget, so each repetition can be divided by the machine's pace beside it.
    """
    prepare = before or _nothing
    warm_up(fn, prepare, warmup_s, min_warmup_calls)
    with timed_window or nullcontext():
        return repeat(fn, prepare, CpuClock(pace), budget_s=budget_s, min_reps=min_reps, max_reps=max_reps)


def _percentile(samples: tuple[float, ...], pct: float) -> float:
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * pct / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _nothing() -> None:
    return None
