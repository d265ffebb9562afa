"""The CUDA timer's loop, emulated on the CPU (device: cpu; torch.cuda's events, synchronize and
device properties stood in): the warm-up waits for each call, the repetitions are as many as the
budget fits at the warm-up's time per call, and the events are read only after the synchronize
that ends them. tests/measure/test_cuda_measure.py times a real GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from linbench.measure import cuda_timer, timer

CALL_MS = 10.0


class Device:
    """The stood-in GPU: one clock that the timed call moves, and a log of what the host asked."""

    def __init__(self) -> None:
        self.now_ms = 0.0
        self.log: list[str] = []
        self.synced_at = -1  # the log's length at the last synchronize

    def perf_counter(self) -> float:
        return self.now_ms / 1e3

    def call(self) -> None:
        self.log.append("call")
        self.now_ms += CALL_MS

    def synchronize(self, device: object = None) -> None:
        self.log.append("sync")
        self.synced_at = len(self.log)


class Event:
    device: Device

    def __init__(self, enable_timing: bool = False) -> None:
        self.at_ms: float | None = None
        self.logged_at = 0

    def record(self) -> None:
        self.device.log.append("record")
        self.at_ms, self.logged_at = self.device.now_ms, len(self.device.log)

    def elapsed_time(self, end: Event) -> float:
        assert end.at_ms is not None and self.at_ms is not None
        assert self.device.synced_at > end.logged_at, "an event read before the device reached it"
        return end.at_ms - self.at_ms


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> Device:
    stand_in = Device()
    Event.device = stand_in
    monkeypatch.setattr(timer, "time", stand_in)  # the warm-up's clock
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", stand_in.synchronize)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(L2_cache_size=1024))
    return stand_in


def test_the_repetitions_fill_the_budget_at_the_warm_ups_time_per_call(device: Device) -> None:
    cpu = torch.device("cpu")
    timing = cuda_timer.time_cuda(device.call, device=cpu, warmup_s=0.05, budget_s=0.1, min_reps=3)
    assert timing.samples_ms == (CALL_MS,) * 10  # 0.1 s of budget at 10 ms a call
    warm_up = ["call", "sync"] * 5  # 50 ms of warm-up, each call waited for
    assert device.log == ["sync", *warm_up, *["record", "call", "record"] * 10, "sync"]


def test_the_repetitions_stay_within_their_bounds(device: Device) -> None:
    cpu = torch.device("cpu")
    few = cuda_timer.time_cuda(device.call, device=cpu, warmup_s=0.0, budget_s=0.0, min_reps=4, flush_l2=False)
    many = cuda_timer.time_cuda(device.call, device=cpu, warmup_s=0.0, budget_s=10.0, min_reps=4, max_reps=7)
    assert (few.count, many.count) == (4, 7)


def test_each_repetition_is_prepared_untimed(device: Device) -> None:
    def before() -> None:
        device.log.append("before")
        device.now_ms += 1000.0  # untimed: outside the events

    timing = cuda_timer.time_cuda(device.call, device=torch.device("cpu"), before=before, warmup_s=0.0, min_reps=2,
                                  max_reps=2)  # fmt: skip
    assert timing.samples_ms == (CALL_MS, CALL_MS)
    repetition = ["before", "record", "call", "record"]
    assert device.log == ["sync", "before", "call", "sync", *repetition, *repetition, "sync"]


def test_a_hold_is_held_while_the_repetitions_are_queued_and_let_go_before_the_wait(device: Device) -> None:
    """The NVML sampler's lock: taken before the first timed repetition, after the warm-up, and
    let go before the host waits for the GPU (so the sampler samples then, never among the calls)."""

    class Hold:
        def __enter__(self) -> None:
            device.log.append("hold")

        def __exit__(self, *exc: object) -> None:
            device.log.append("let go")

    cuda_timer.time_cuda(device.call, device=torch.device("cpu"), warmup_s=0.0, min_reps=2, max_reps=2,
                         flush_l2=False, hold=Hold())  # fmt: skip
    repetition = ["record", "call", "record"]
    assert device.log == ["sync", "call", "sync", "hold", *repetition, *repetition, "let go", "sync"]
