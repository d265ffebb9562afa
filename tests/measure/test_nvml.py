"""The NVML sampler's readings and the thread both NVML samplers run on (device: none; NVML stood in)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from linbench.measure import nvml
from linbench.measure.nvml import GPU_IDLE, NvmlSampler, Periodic, throttle_names


def fake_nvml(readings: list[tuple[int, int, int, int]]) -> SimpleNamespace:
    """NVML giving (used bytes, SM clock, temperature, reason mask) from ``readings`` in turn."""
    turn = iter(readings)
    now: dict[str, int] = {}

    def memory(handle: object) -> SimpleNamespace:  # the first call of a sample
        now.update(zip(("used", "clock", "temp", "mask"), next(turn), strict=True))
        return SimpleNamespace(used=now["used"])

    return SimpleNamespace(
        NVML_CLOCK_SM=0,
        NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetMemoryInfo=memory,
        nvmlDeviceGetClockInfo=lambda handle, kind: now["clock"],
        nvmlDeviceGetTemperature=lambda handle, kind: now["temp"],
        nvmlDeviceGetCurrentClocksEventReasons=lambda handle: now["mask"],
        nvmlShutdown=lambda: now.update(shut=1),
        now=now,
    )


def test_the_sampler_keeps_the_peak_the_lowest_clock_and_every_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = fake_nvml([(100, 1500, 50, 0), (300, 1200, 60, 0x4 | GPU_IDLE)])
    monkeypatch.setattr(nvml, "load_nvml", lambda: fake)
    monkeypatch.setattr(nvml, "nvml_handle", lambda lib, index: "handle")
    with NvmlSampler(0, interval_s=3600) as sampler:  # one reading on entry, one on exit
        pass
    assert sampler.error is None and fake.now["shut"] == 1
    assert (sampler.peak_used_bytes, sampler.min_sm_clock_mhz, sampler.max_temp_c) == (300, 1200, 60)
    assert sampler.samples == 2
    assert throttle_names(sampler.throttle_mask) == "gpu_idle|sw_power_cap"


def test_without_nvml_the_sampler_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise ImportError("no pynvml")

    monkeypatch.setattr(nvml, "load_nvml", missing)
    with NvmlSampler(0) as sampler:
        pass
    assert sampler.error == "NVML unavailable: ImportError: no pynvml" and sampler.samples == 0


def test_periodic_samples_until_stopped_and_never_after() -> None:
    calls: list[int] = []
    sampled = threading.Event()

    def sample() -> None:
        calls.append(1)
        sampled.set()

    periodic = Periodic(sample, 0.001, "test-periodic").start()
    assert sampled.wait(timeout=60)
    periodic.stop()
    seen = len(calls)
    assert seen >= 1 and not periodic._thread.is_alive() and len(calls) == seen


def test_periodic_never_samples_while_its_hold_is_held() -> None:
    """The timing thread holds the lock while it queues timed calls: no sample may land there."""
    hold = threading.Lock()
    in_call = threading.Event()
    seen: list[bool] = []
    sampled = threading.Event()

    def sample() -> None:
        seen.append(in_call.is_set())
        sampled.set()

    periodic = Periodic(sample, 0.0005, "test-periodic-hold", hold=hold).start()
    for _ in range(20):
        with hold:  # a timed repetition: the sampler wakes many times in it, and waits
            in_call.set()
            time.sleep(0.002)
            in_call.clear()
        sampled.clear()
        assert sampled.wait(timeout=60)  # between calls it samples
    periodic.stop()
    assert len(seen) >= 20 and not any(seen)


def test_the_sampler_waits_on_its_quiet_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = fake_nvml([(100, 1500, 50, 0)] * 1000)
    monkeypatch.setattr(nvml, "load_nvml", lambda: fake)
    monkeypatch.setattr(nvml, "nvml_handle", lambda lib, index: "handle")
    with NvmlSampler(0, interval_s=0.0005) as sampler, sampler.quiet:
        before = sampler.samples
        time.sleep(0.02)  # about 40 wake-ups of its thread
        assert sampler.samples == before
