"""Peak RSS above the baseline, reset between regions (CPU, Linux).

The arithmetic is checked exactly against a kernel these tests drive themselves. The real
kernel's figures move with whatever else the process maps and the system reclaims, so the
tests on it assert only what no such noise can produce: most of a touched allocation counts,
and nothing resident before the block does.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from linbench.measure import memory
from linbench.measure.memory import PeakRSS

MIB = 2**20


class FakeKernel:
    """/proc/self's VmRSS and VmHWM, and clear_refs' reset of the high-water mark."""

    def __init__(self, rss: int) -> None:
        self.rss = self.hwm = rss

    def status_bytes(self, field: str) -> int:
        return {"VmRSS": self.rss, "VmHWM": self.hwm}[field]

    def reset_peak(self) -> None:
        self.hwm = self.rss

    def change(self, delta: int) -> None:
        self.rss += delta
        self.hwm = max(self.hwm, self.rss)


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    fake = FakeKernel(rss=500 * MIB)
    monkeypatch.setattr(memory, "_status_bytes", fake.status_bytes)
    monkeypatch.setattr(memory, "reset_peak_rss", fake.reset_peak)
    return fake


def test_the_peak_is_the_high_water_mark_above_the_rss_before_the_block(kernel: FakeKernel) -> None:
    kernel.change(+400 * MIB)  # an earlier peak, before the block: not the block's
    kernel.change(-400 * MIB)
    with PeakRSS() as peak:
        kernel.change(+64 * MIB)
        kernel.change(+16 * MIB)
        kernel.change(-80 * MIB)
    assert (peak.baseline_bytes, peak.peak_bytes) == (500 * MIB, 80 * MIB)


def test_a_block_that_frees_memory_peaks_at_zero(kernel: FakeKernel) -> None:
    with PeakRSS() as peak:
        kernel.change(-100 * MIB)
    assert peak.peak_bytes == 0


# Run in a process of its own: in a test worker, memory other tests' threads free during the
# block lowers the resident set under the baseline (a worker at 874 MiB read 0 once in CI).
TOUCH = """
import torch
from linbench.measure.memory import PeakRSS
with PeakRSS() as peak:
    buffer = torch.ones(64 * 2**20 // 4)  # 64 MiB, every page written
    del buffer
print(peak.peak_bytes, peak.baseline_bytes)
"""


def test_peak_counts_a_touched_allocation() -> None:
    done = subprocess.run([sys.executable, "-c", TOUCH], capture_output=True, text=True, timeout=120, check=True)
    peak_bytes, baseline_bytes = map(int, done.stdout.split())
    # Most of its pages (the kernel may reclaim others of the process's pages meanwhile), and
    # far less than the process held before (hundreds of MiB with torch): the baseline is off.
    assert 48 * MIB <= peak_bytes <= 128 * MIB < baseline_bytes


def test_peak_is_reset_between_regions() -> None:
    with PeakRSS():
        big = torch.ones(96 * MIB // 4)
        del big
    with PeakRSS() as small:
        tiny = torch.ones(1024)
        del tiny
    assert small.peak_bytes < 32 * MIB  # none of the 96 MiB of the region before
