"""The GPU's energy per call, from NVML's total-energy counter.

NVML counts the energy the GPU has drawn since the driver loaded, in millijoules
(``nvmlDeviceGetTotalEnergyConsumption``, Volta and later). Read before and after calls made
back to back, the difference over the calls is the energy of one call and over the seconds the
average power. The counter moves in steps of its own (tens of milliseconds on current GPUs), so
the window runs at least ``MIN_WINDOW_S`` seconds (or one call, where a call is longer); the
joules of a shorter window would be mostly the step. The power limit and the clocks the GPU held
say what the figure was measured at.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MIN_WINDOW_S = 0.5
# Calls are made in batches of about this many seconds between synchronisations: the clock must
# see the GPU's work, yet a short call synchronised every time would leave the GPU idling.
BATCH_S = 0.05


@dataclass(frozen=True)
class EnergyWindow:
    """Calls made back to back and what NVML's counter and the clock said around them."""

    millijoules: float
    seconds: float
    calls: int

    @property
    def joules_per_call(self) -> float:
        return self.millijoules / 1e3 / self.calls

    @property
    def watts(self) -> float:
        return self.millijoules / 1e3 / self.seconds


def measure_energy(
    fn: Callable[[], object],
    read_millijoules: Callable[[], float],
    synchronize: Callable[[], object],
    call_s: float,
    min_s: float = MIN_WINDOW_S,
    clock: Callable[[], float] = time.perf_counter,
) -> EnergyWindow:
    """Calls of ``fn`` (about ``call_s`` seconds each, as timed) back to back, in batches of
    about BATCH_S seconds, until at least ``min_s`` seconds have passed (one call at least),
    the counter read (after ``synchronize``) on either side."""
    batch = max(1, round(BATCH_S / max(call_s, 1e-6)))
    synchronize()
    start_mj, start_s = read_millijoules(), clock()
    calls = 0
    while calls == 0 or clock() - start_s < min_s:
        for _ in range(batch):
            fn()
        calls += batch
        synchronize()
    end_mj, end_s = read_millijoules(), clock()
    return EnergyWindow(end_mj - start_mj, end_s - start_s, calls)


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
