"""Energy per call from NVML's total-energy counter (a fake GPU, counter and clock; CPU)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from linbench.measure.energy import (
    MAX_WAIT_S,
    CounterStuckError,
    EnergyWindow,
    Probe,
    measure_energy,
    power_facts,
)

LAUNCH_S = 5e-6  # the host's time to queue one call
READ_S = 2e-4  # the host's time to read the counter


class Gpu:
    """A fake GPU that runs the calls the host queues one after another, ``call_s`` each, while
    drawing ``watts``; its NVML counter steps every ``period_s`` (the first step at ``phase_s``)
    and holds the energy drawn up to its last step. ``now`` is the host's clock."""

    def __init__(self, watts: float, call_s: float, period_s: float = 0.1, phase_s: float = 0.0) -> None:
        self.watts, self.call_s, self.period_s, self.phase_s = watts, call_s, period_s, phase_s
        self.now, self.busy_until, self.calls = 0.0, 0.0, 0

    def call(self) -> None:
        self.now += LAUNCH_S
        self.busy_until = max(self.busy_until, self.now) + self.call_s
        self.calls += 1

    def mark(self) -> Probe:
        queued = self.busy_until
        return lambda: self.now >= queued

    def synchronize(self) -> None:
        self.now = max(self.now, self.busy_until)

    def millijoules(self) -> float:
        self.now += READ_S
        stepped = math.floor((self.now - self.phase_s) / self.period_s) * self.period_s + self.phase_s
        return 5e6 + self.watts * max(stepped, 0.0) * 1e3  # a counter that started long before

    def window(self, min_s: float = 0.5) -> EnergyWindow:
        return measure_energy(
            self.call, self.millijoules, self.synchronize, self.mark, self.call_s, min_s, clock=lambda: self.now
        )


@pytest.mark.parametrize("call_s", [0.0007, 0.013])
def test_energy_per_call_is_right_whatever_the_phase_of_the_counter_s_steps(call_s: float) -> None:
    """A counter stepping every 100 ms under a constant 500 W: a window read at arbitrary moments
    is off by up to a step at each end (±20% of 0.5 s); one aligned to the steps is not."""
    for phase_s in [i * 0.01 for i in range(10)]:
        gpu = Gpu(watts=500.0, call_s=call_s, phase_s=phase_s)
        window = gpu.window()
        assert window.joules_per_call == pytest.approx(500.0 * call_s, rel=0.05), phase_s
        assert window.watts == pytest.approx(500.0, rel=0.01)
        # The window runs between two steps: a whole number of them, at least 0.5 s.
        assert window.updates == round(window.seconds / 0.1) and 0.5 <= window.seconds < 0.6 + 1e-3


def test_the_calls_are_fed_back_to_back_without_waiting_for_the_gpu() -> None:
    gpu = Gpu(watts=300.0, call_s=0.001)
    window = gpu.window()
    assert window.call_s == pytest.approx(0.001, rel=0.01)  # the GPU never ran dry
    assert gpu.calls * 0.001 == pytest.approx(gpu.now, rel=0.01)


def test_a_call_longer_than_the_window_is_measured_across_the_counter_s_steps() -> None:
    gpu = Gpu(watts=100.0, call_s=2.0, phase_s=0.037)
    window = gpu.window()
    assert gpu.calls == 2 and window.joules_per_call == pytest.approx(200.0, rel=0.01)


def test_a_counter_that_never_moves_is_refused_not_read_as_no_energy() -> None:
    gpu = Gpu(watts=0.0, call_s=0.01)
    gpu.millijoules = lambda: setattr(gpu, "now", gpu.now + 1e-3) or 5e6  # type: ignore[method-assign]
    with pytest.raises(CounterStuckError, match="did not move"):
        gpu.window()
    assert gpu.now >= MAX_WAIT_S


def test_the_window_s_arithmetic() -> None:
    window = EnergyWindow(millijoules=3000.0, seconds=2.0, updates=20, call_s=0.01)
    assert (window.watts, window.joules_per_call) == (pytest.approx(1.5), pytest.approx(0.015))


def test_power_facts_report_what_nvml_answers_and_leave_out_what_it_cannot() -> None:
    def unsupported(handle: object, which: int) -> float:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    nvml = SimpleNamespace(nvmlDeviceGetEnforcedPowerLimit=lambda handle: 700000, NVML_CLOCK_MEM=1)
    assert power_facts(SimpleNamespace(**vars(nvml), nvmlDeviceGetClockInfo=unsupported), None) == {
        "power_limit_w": 700.0
    }
    full = SimpleNamespace(**vars(nvml), nvmlDeviceGetClockInfo=lambda handle, which: 2619)
    assert power_facts(full, None) == {"power_limit_w": 700.0, "mem_clock_mhz": 2619.0}


@pytest.mark.cuda
def test_a_matmul_s_energy_is_read_between_two_updates_of_the_real_counter() -> None:
    """On a GPU: the window spans whole updates of NVML's counter, at least 0.5 s."""
    import torch

    from linbench.measure.nvml import load_nvml, nvml_handle
    from linbench.runner.execute_gpu import _marker

    device = torch.device("cuda", 0)
    a = torch.randn(4096, 4096, device=device)
    nvml = load_nvml()
    try:
        handle = nvml_handle(nvml, 0)
        window = measure_energy(
            lambda: a @ a,
            lambda: float(nvml.nvmlDeviceGetTotalEnergyConsumption(handle)),
            lambda: torch.cuda.synchronize(device),
            _marker,
            call_s=0.001,
        )
    finally:
        nvml.nvmlShutdown()
    assert window.seconds >= 0.5 and window.updates >= 1
    assert 10 < window.watts < 2000 and window.joules_per_call > 0
