"""Memory verdicts (CPU and GPU rows, synthetic): exact where the reading is exact (the CUDA
allocator's count), tolerant where it is not (peak RSS on a CPU, whose identical processes
were measured up to 1.31 MiB apart)."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import scaled, series, write_run

from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.memory import CPU_MEMORY_FLOOR_BYTES, judge_memory
from linbench.report.load import read_run

MIB = 1 << 20
# Two processes of cosine:chunked at 4k (B1 H8 D64 fp32) in back-to-back runs on a busy
# 2-core machine, same code: their peak RSS.
LOW, HIGH = 36_978_688, 38_350_848


def _single(tmp_path: Path, base_bytes: float, cur_bytes: float, **fixed) -> list[str]:
    rows = series("cosine", "chunked", lambda s: 0.01 * s, peak_bytes=lambda s: base_bytes, seqs=(4096,), **fixed)
    base = read_run(write_run(tmp_path / "base", rows))
    cur = read_run(write_run(tmp_path / "cur", scaled(rows, memory=cur_bytes / base_bytes)))
    return [p.memory_verdict for p in compare_runs(base, cur, Thresholds()).points]


def test_the_measured_rss_spread_of_identical_cpu_processes_is_no_regression(tmp_path: Path) -> None:
    assert HIGH - LOW > MIB and (HIGH - LOW) / LOW > 0.02  # past the old 1 MiB floor and 2%
    assert _single(tmp_path, LOW, HIGH) == ["larger"]
    assert CPU_MEMORY_FLOOR_BYTES > HIGH - LOW


def test_a_planted_10_percent_growth_of_cpu_memory_is_still_caught(tmp_path: Path) -> None:
    assert _single(tmp_path, LOW, LOW * 1.10) == ["regression"]  # +3.7 MiB


def test_gpu_memory_is_exact(tmp_path: Path) -> None:
    gpu = {"device": "cuda:0", "device_name": "Test GPU"}
    assert _single(tmp_path, 1_000_000, 1_030_000, **gpu) == ["regression"]  # +3%, 30 kB: the allocator counts exactly
    assert _single(tmp_path / "same", 1_000_000, 1_000_000, **gpu) == ["same"]


@pytest.mark.parametrize(
    ("base", "cur", "exact", "verdict"),
    [
        ([37 * MIB, 37.1 * MIB, 37.2 * MIB], [41.0 * MIB, 41.1 * MIB, 41.2 * MIB], False, "regression"),
        # The median grew past the floor, but one current process sits among the baseline's.
        ([37 * MIB, 37.1 * MIB, 37.2 * MIB], [37.0 * MIB, 41.1 * MIB, 41.2 * MIB], False, "larger"),
        # On a GPU the largest process is compared: readings are exact, so no overlap test.
        ([37 * MIB, 37 * MIB], [37 * MIB, 41 * MIB], True, "regression"),
        # A reading on one side only is not judged, and not passed (compare.py: inconclusive).
        ([], [37 * MIB], False, "one side only"),
        ([37 * MIB], [], True, "one side only"),
        ([], [], True, "-"),
    ],
)
def test_judge_memory(base: list[float], cur: list[float], exact: bool, verdict: str) -> None:
    floor = 0 if exact else CPU_MEMORY_FLOOR_BYTES
    assert judge_memory(base, cur, exact, 0.02, floor).verdict == verdict


def test_cpu_memory_compares_the_median_process_and_gpu_the_largest() -> None:
    readings = [10 * MIB, 11 * MIB, 30 * MIB]
    assert judge_memory(readings, readings, False, 0.02, 0).base_bytes == 11 * MIB
    assert judge_memory(readings, readings, True, 0.02, 0).base_bytes == 30 * MIB


def _cpu_alloc(tmp_path: Path, base_alloc: float | None, cur_alloc: float | None) -> list[str]:
    """One CPU point whose peak RSS is the same on both sides (within the RSS floor) and whose
    alloc_peak_bytes (torch's count) is ``base_alloc`` and ``cur_alloc`` (None: not recorded)."""
    rows = series("cosine", "recurrent", lambda s: 0.01 * s, peak_bytes=lambda s: LOW, seqs=(1024,))
    base = [dict(row, alloc_peak_bytes=base_alloc) for row in rows]
    cur = [dict(row, peak_bytes=LOW + MIB, alloc_peak_bytes=cur_alloc) for row in rows]
    base_run, cur_run = read_run(write_run(tmp_path / "base", base)), read_run(write_run(tmp_path / "cur", cur))
    compared = compare_runs(base_run, cur_run, Thresholds())
    return [p.memory_verdict for p in compared.points]


def test_cpu_memory_is_judged_exactly_on_what_a_call_allocated_through_torch(tmp_path: Path) -> None:
    ten_mib = 10 * MIB
    # +10% of a 10 MiB point is 1 MiB: inside peak RSS's 2 MiB floor, yet an exact count.
    assert _cpu_alloc(tmp_path / "grown", ten_mib, ten_mib * 1.10) == ["regression"]
    # Peak RSS grew by 1 MiB on the current side; the count did not move: no growth at all.
    assert _cpu_alloc(tmp_path / "same", ten_mib, ten_mib) == ["same"]


def test_a_cpu_run_without_the_count_is_judged_on_peak_rss(tmp_path: Path) -> None:
    # The baseline predates alloc_peak_bytes: peak RSS, +1 MiB, below the floor.
    assert _cpu_alloc(tmp_path, None, 20 * MIB) == ["larger"]
