"""Energy per call from NVML's total-energy counter (a fake counter and clock; CPU)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from linbench.measure.energy import EnergyWindow, measure_energy, power_facts


class Gpu:
    """A fake GPU drawing ``watts`` while each call takes ``call_s``: its clock and counter."""

    def __init__(self, watts: float, call_s: float) -> None:
        self.watts, self.call_s, self.now, self.syncs = watts, call_s, 0.0, 0

    def call(self) -> None:
        self.now += self.call_s

    def millijoules(self) -> float:
        return 5e6 + self.watts * self.now * 1e3  # a counter that started long before

    def synchronize(self) -> None:
        self.syncs += 1


def test_joules_per_call_and_power_are_the_counter_s_difference_over_calls_and_seconds() -> None:
    gpu = Gpu(watts=400.0, call_s=0.01)
    window = measure_energy(gpu.call, gpu.millijoules, gpu.synchronize, 0.01, min_s=0.5, clock=lambda: gpu.now)
    assert window.calls == 50  # 0.5 s of 10 ms calls, in batches of 5 (50 ms)
    assert gpu.syncs == 11  # before the window, then after each batch
    assert window.joules_per_call == pytest.approx(4.0)  # 400 W × 10 ms
    assert window.watts == pytest.approx(400.0)


def test_a_call_longer_than_the_window_is_made_once() -> None:
    gpu = Gpu(watts=100.0, call_s=2.0)
    window = measure_energy(gpu.call, gpu.millijoules, gpu.synchronize, 2.0, min_s=0.5, clock=lambda: gpu.now)
    assert window.calls == 1 and window.joules_per_call == pytest.approx(200.0)


def test_the_window_s_arithmetic() -> None:
    window = EnergyWindow(millijoules=3000.0, seconds=2.0, calls=30)
    assert (window.joules_per_call, window.watts) == (pytest.approx(0.1), pytest.approx(1.5))


def test_power_facts_report_what_nvml_answers_and_leave_out_what_it_cannot() -> None:
    def unsupported(handle: object, which: int) -> float:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    nvml = SimpleNamespace(nvmlDeviceGetEnforcedPowerLimit=lambda handle: 700000, NVML_CLOCK_MEM=1)
    assert power_facts(SimpleNamespace(**vars(nvml), nvmlDeviceGetClockInfo=unsupported), None) == {
        "power_limit_w": 700.0
    }
    full = SimpleNamespace(**vars(nvml), nvmlDeviceGetClockInfo=lambda handle, which: 2619)
    assert power_facts(full, None) == {"power_limit_w": 700.0, "mem_clock_mhz": 2619.0}
