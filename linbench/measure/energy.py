"""The GPU's energy per call, from NVML's total-energy counter.

NVML counts the energy the GPU has drawn since the driver loaded, in millijoules
(``nvmlDeviceGetTotalEnergyConsumption``, Volta and later). The counter does not move with every
millijoule: it steps about every 100 ms (published measurements on A100 and H100), so a window
read at arbitrary moments is off by up to one step at each end, about ±20% of a 0.5 s window.
So the window is aligned to the counter's own updates: calls run back to back, the host reads
the counter between them until its value changes, and the window runs from that change to the
first change at least ``MIN_WINDOW_S`` later. The energy between two updates is exact (to the
counter's own accuracy); the seconds between them are the moments the host saw the changes,
each late by at most one pass of the reading loop (a read, and up to two batches of ``BATCH_S``
of calls where the host itself is what keeps the GPU waiting: under 1% of the window between
them). The average power over the window times the seconds one call takes back to back (the
loop's wall time over its calls) is the energy of one call. The window's length and the
counter's updates in it are recorded with the result.

The calls are fed without waiting for the GPU: a new batch is queued whenever the oldest of
the two in flight has finished (a ``mark`` after each batch says when), so the device never
runs dry while the host reads the counter, and the reads are never late by a whole
synchronisation. The power limit and the clocks the GPU held say what the figure was measured at.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The window between its two counter updates is at least this long (about five updates).
MIN_WINDOW_S = 0.5
# A batch of calls queued at once is about this long; two are kept in flight, so the device has
# at least one queued while the host reads the counter.
BATCH_S = 0.002
# A counter that has not moved for this long while the GPU works is not read as moving.
MAX_WAIT_S = 2.0

# A probe of work queued so far: True once the device has finished it (a recorded CUDA event's query).
Probe = Callable[[], bool]


class CounterStuckError(RuntimeError):
    """NVML's energy counter did not change while calls ran for ``MAX_WAIT_S``."""


@dataclass(frozen=True)
class EnergyWindow:
    """What NVML's counter said between two of its updates while calls ran back to back."""

    millijoules: float  # the counter's difference between the window's two updates
    seconds: float  # the host's seconds between seeing those two updates
    updates: int  # the counter's updates inside the window (its steps)
    call_s: float  # seconds per call back to back: the loop's wall time over its calls

    @property
    def watts(self) -> float:
        return self.millijoules / 1e3 / self.seconds

    @property
    def joules_per_call(self) -> float:
        return self.watts * self.call_s


class _Feeder:
    """Keeps two batches of calls in flight: a new one as soon as the oldest has finished."""

    def __init__(self, fn: Callable[[], object], mark: Callable[[], Probe], call_s: float) -> None:
        self._fn, self._mark = fn, mark
        self._batch = max(1, round(BATCH_S / max(call_s, 1e-6)))
        self._in_flight: deque[Probe] = deque()
        self.calls = 0

    def top_up(self) -> None:
        while self._in_flight and self._in_flight[0]():
            self._in_flight.popleft()
        while len(self._in_flight) < 2:
            for _ in range(self._batch):
                self._fn()
            self.calls += self._batch
            self._in_flight.append(self._mark())


def measure_energy(
    fn: Callable[[], object],
    read_millijoules: Callable[[], float],
    synchronize: Callable[[], object],
    mark: Callable[[], Probe],
    call_s: float,
    min_s: float = MIN_WINDOW_S,
    clock: Callable[[], float] = time.perf_counter,
) -> EnergyWindow:
    """Calls of ``fn`` (about ``call_s`` seconds each, as timed) back to back from one update of
    the counter to the first at least ``min_s`` seconds later. ``mark`` returns a probe of the
    work queued so far; CounterStuckError when the counter does not move."""
    feeder = _Feeder(fn, mark, call_s)
    synchronize()
    started = clock()
    feeder.top_up()
    first_mj, first_s = _next_update(read_millijoules(), read_millijoules, feeder, clock)
    last_mj, last_s, updates = first_mj, first_s, 0
    while updates == 0 or last_s - first_s < min_s:
        last_mj, last_s = _next_update(last_mj, read_millijoules, feeder, clock)
        updates += 1
    synchronize()
    loop_s = clock() - started
    return EnergyWindow(last_mj - first_mj, last_s - first_s, updates, loop_s / feeder.calls)


def _next_update(
    seen: float, read_millijoules: Callable[[], float], feeder: _Feeder, clock: Callable[[], float]
) -> tuple[float, float]:
    """The counter's next value after ``seen`` and when the host saw it, the calls kept coming."""
    deadline = clock() + MAX_WAIT_S
    while True:
        feeder.top_up()
        value, now = read_millijoules(), clock()
        if value != seen:
            return value, now
        if now > deadline:
            raise CounterStuckError(f"NVML's energy counter did not move in {MAX_WAIT_S:g} s of calls")


def power_facts(nvml: Any, handle: Any) -> dict[str, float]:
    """The GPU's enforced power limit (W) and its memory clock (MHz) now; what NVML does not
    report is left out."""
    facts: dict[str, float] = {}
    readers = {
        "power_limit_w": lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1e3,
        "mem_clock_mhz": lambda: float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)),
    }
    for name, read in readers.items():
        try:
            facts[name] = round(float(read()), 1)
        except Exception:  # an older GPU or driver without the query: the fact is left out
            continue
    return facts
