"""The peak of the live bytes a call allocates through torch on the CPU (torch's profiler), and
whether the profiled call's time may be a repetition (device: cpu).

The figures are torch's own count of the sizes it allocated, so they are asserted exactly.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch.autograd import DeviceType

from linbench.measure.allocations import (
    MEMORY_EVENT,
    NEGLIGIBLE_PROFILER_SHARE,
    PROFILER_CALL_COST_MS,
    PROFILER_EVENT_COST_MS,
    ProfiledCall,
    allocated_peak_bytes,
    peak_of_events,
    profiled_call,
)

MIB = 2**20
FLOATS_PER_MIB = MIB // 4


def _event(start_ns: int, nbytes: int, name: str = MEMORY_EVENT, device: DeviceType = DeviceType.CPU) -> object:
    return SimpleNamespace(
        name=lambda: name, start_ns=lambda: start_ns, nbytes=lambda: nbytes, device_type=lambda: device
    )


def test_the_peak_is_the_largest_running_sum_in_time_order() -> None:
    events = [_event(3, -4 * MIB), _event(1, 4 * MIB), _event(2, 2 * MIB), _event(4, 1 * MIB)]
    assert peak_of_events(events) == 6 * MIB


def test_other_events_and_other_devices_do_not_count() -> None:
    events = [_event(1, 8 * MIB, name="aten::empty"), _event(2, 8 * MIB, device=DeviceType.CUDA), _event(3, MIB)]
    assert peak_of_events(events) == MIB


def test_a_call_that_frees_what_it_allocated_peaks_at_the_most_it_held_at_once() -> None:
    def call() -> None:
        a = torch.empty(4 * FLOATS_PER_MIB)
        b = torch.empty(2 * FLOATS_PER_MIB)
        del a
        c = torch.empty(FLOATS_PER_MIB)
        del b, c

    assert allocated_peak_bytes(call) == 6 * MIB


def test_a_tensor_made_before_the_call_and_freed_in_it_lowers_nothing() -> None:
    held = [torch.empty(8 * FLOATS_PER_MIB)]

    def call() -> None:
        held.clear()  # 8 MiB allocated before the call: torch does not report its free
        torch.empty(3 * FLOATS_PER_MIB)

    assert allocated_peak_bytes(call) == 3 * MIB


def test_the_same_call_reads_the_same_after_a_larger_one() -> None:
    x = torch.randn(256, 256)

    def small() -> None:
        (x @ x).softmax(-1)

    first = allocated_peak_bytes(small)
    allocated_peak_bytes(lambda: torch.randn(2048, 2048).softmax(-1))
    assert allocated_peak_bytes(small) == first == 2 * 256 * 256 * 4


def test_a_profiled_call_is_a_repetition_only_where_its_profiler_cost_is_under_half_a_percent() -> None:
    """The bound is PROFILER_CALL_COST_MS + events · PROFILER_EVENT_COST_MS, against the shorter of
    the call's wall and CPU times (a preempted call's wall time does not hide the cost)."""
    few = PROFILER_CALL_COST_MS + 27 * PROFILER_EVENT_COST_MS  # an SDPA call's events
    shortest = few / NEGLIGIBLE_PROFILER_SHARE
    assert ProfiledCall(0, 27, wall_ms=shortest * 1.01, cpu_ms=shortest * 1.01).timeable
    assert not ProfiledCall(0, 27, wall_ms=shortest * 0.99, cpu_ms=shortest * 1.01).timeable
    assert not ProfiledCall(0, 27, wall_ms=shortest * 1.01, cpu_ms=shortest * 0.99).timeable
    assert not ProfiledCall(0, 2700, wall_ms=shortest * 1.01, cpu_ms=shortest * 1.01).timeable


def test_profiled_call_counts_the_events_of_the_call_and_its_allocations() -> None:
    """Each op is an event and so is each allocation: a hundred additions record more than a
    hundred events, one copy a handful; the peak is one result's bytes either way (and the
    scalar the addition wraps in a tensor of its own)."""
    x = torch.zeros(FLOATS_PER_MIB)
    one = profiled_call(x.clone)
    assert one.events < 20 and one.peak_bytes == MIB
    assert one.wall_ms > 0 and one.cpu_ms >= 0

    def hundred() -> None:
        for _ in range(100):
            x.add(1)

    many = profiled_call(hundred)
    assert many.events > 100 and MIB <= many.peak_bytes < MIB + 1024
