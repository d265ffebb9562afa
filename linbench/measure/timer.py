"""Wall-clock timing on CPU: warm-up and repetition by time budget, median and spread.

Each repetition is also timed in the process's CPU time (all its threads, the kernel's
CLOCK_PROCESS_CPUTIME_ID): the work the call did, to which a preemption by another process adds
nothing, where the wall clock counts every millisecond the call waited for a core. With one
torch thread the two agree on a quiet machine; on a busy one the CPU time is what the gate can
still judge (linbench/gate/statistic.py). The GPU timer (cuda_timer.py) follows the same policy
with CUDA events.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Raw samples of one timed closure, in milliseconds, and their summary."""

    samples_ms: tuple[float, ...]
    # Each repetition's process CPU time, in the same order (empty where none was taken: CUDA).
    cpu_samples_ms: tuple[float, ...] = ()

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    def percentile_ms(self, pct: float) -> float:
        """Linear-interpolated percentile (0–100) of the samples."""
        return _percentile(self.samples_ms, pct)

    def cpu_percentile_ms(self, pct: float) -> float | None:
        """The same percentile of the repetitions' CPU times (None where none was taken)."""
        return _percentile(self.cpu_samples_ms, pct) if self.cpu_samples_ms else None

    @property
    def count(self) -> int:
        return len(self.samples_ms)


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
    """
    prepare = before or _nothing
    calls, start = 0, time.perf_counter()
    while calls < min_warmup_calls or time.perf_counter() - start < warmup_s:
        prepare()
        fn()
        calls += 1
    samples: list[float] = []
    cpu_samples: list[float] = []
    timed_ms = 0.0
    with timed_window or nullcontext():
        while len(samples) < max_reps and (len(samples) < min_reps or timed_ms < budget_s * 1e3):
            prepare()
            c0, t0 = time.process_time_ns(), time.perf_counter_ns()
            fn()
            t1, c1 = time.perf_counter_ns(), time.process_time_ns()
            samples.append((t1 - t0) / 1e6)
            cpu_samples.append((c1 - c0) / 1e6)
            timed_ms += samples[-1]
    return Timing(tuple(samples), tuple(cpu_samples))


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
