"""Peak RSS above the baseline, reset between regions."""

from __future__ import annotations

import torch

from linbench.measure.memory import PeakRSS

MIB = 2**20


def test_peak_counts_a_touched_allocation() -> None:
    with PeakRSS() as peak:
        buffer = torch.ones(64 * MIB // 4)  # 64 MiB, every page written
        del buffer
    assert 60 * MIB <= peak.peak_bytes <= 80 * MIB


def test_peak_is_reset_between_regions() -> None:
    with PeakRSS():
        big = torch.ones(96 * MIB // 4)
        del big
    with PeakRSS() as small:
        tiny = torch.ones(1024)
        del tiny
    assert small.peak_bytes < 16 * MIB
