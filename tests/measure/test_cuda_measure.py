"""The GPU measurement paths against figures known in advance (skipped without a GPU)."""

from __future__ import annotations

import time

import pytest
import torch

from linbench.measure.cuda_memory import CudaPeak
from linbench.measure.cuda_timer import l2_flush_bytes, time_cuda
from linbench.measure.nvml import NvmlSampler

pytestmark = pytest.mark.cuda
DEVICE = torch.device("cuda", 0)


def test_allocator_peak_of_a_known_allocation_is_exact() -> None:
    held = torch.empty(1 << 20, device=DEVICE)  # held before: not counted
    with CudaPeak(DEVICE) as peak:
        block = torch.empty(64 << 20, dtype=torch.uint8, device=DEVICE)
        del block
    assert peak.peak_bytes == 64 << 20
    assert peak.reserved_bytes >= 64 << 20
    del held


def test_event_timer_measures_a_known_sleep() -> None:
    cycles = int(torch.cuda.get_device_properties(DEVICE).clock_rate * 1000 * 0.002)  # ~2 ms at base clock
    timing = time_cuda(lambda: torch.cuda._sleep(cycles), device=DEVICE, warmup_s=0.01, budget_s=0.05, min_reps=5)
    assert timing.count >= 5
    assert 0.5 < timing.median_ms < 20


def test_flush_buffer_covers_l2() -> None:
    l2 = torch.cuda.get_device_properties(DEVICE).L2_cache_size
    assert l2_flush_bytes(DEVICE) >= 2 * l2 > 0


def test_nvml_sees_an_allocation_and_the_clock() -> None:
    with NvmlSampler(0, interval_s=0.001) as sampler:
        block = torch.ones(1 << 30, dtype=torch.uint8, device=DEVICE)  # 1 GiB, touched
        torch.cuda.synchronize()
        time.sleep(0.05)
        del block
    assert sampler.error is None, sampler.error
    assert sampler.samples >= 2
    assert sampler.peak_used_bytes is not None and sampler.peak_used_bytes >= 1 << 30
    assert sampler.min_sm_clock_mhz and sampler.min_sm_clock_mhz > 0
