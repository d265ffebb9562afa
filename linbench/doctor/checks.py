"""A doctor's check and the rules that turn measured numbers into pass, warn or fail.

Pure logic, no torch: every rule is tested with synthetic numbers. A check *fails* only
where a figure linbench records would be wrong (an allocator that miscounts, a clock that
cannot time a point, a device far below what it should do); it *warns* where the numbers
will be right but noisy or low (throttling, other processes, a ceiling below nominal).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from linbench.measure.nvml import THROTTLE_REASONS

PASS, WARN, FAIL = "pass", "warn", "fail"
VERDICTS = (PASS, WARN, FAIL)
MIB = 1 << 20

# Copy bandwidth against the datasheet: a D2D copy reaches 80-90% of it on a healthy GPU.
COPY_PASS_RATIO, COPY_WARN_RATIO = 0.6, 0.3
# Matmul against the datasheet: a large cuBLAS GEMM reaches 60-80% of it.
MATMUL_PASS_RATIO, MATMUL_WARN_RATIO = 0.5, 0.2
# Above the datasheet by more than this, the timer or the table is wrong.
ABOVE_NOMINAL = 1.05
# No nominal figure: below these the value is broken, whatever the device.
CPU_COPY_FLOOR_GB_S, CPU_MATMUL_FLOOR_TFLOPS = 1.0, 2e-3
GPU_COPY_FLOOR_GB_S, GPU_MATMUL_FLOOR_TFLOPS = 50.0, 1.0
# The CPU peak-RSS method: within this much of a known allocation it is right.
RSS_TOLERANCE_BYTES, RSS_TOLERANCE_SHARE = 4 * MIB, 0.10
# Timers: linbench reports milliseconds; a microsecond of resolution is plenty.
TIMER_PASS_S, TIMER_WARN_S = 1e-6, 1e-4
EVENT_PASS_S = 1e-5
LAUNCH_PASS_S = 2e-5
# Other work on the machine: share of the cores busy outside this process; GPU utilisation
# while this process runs nothing.
CPU_BUSY_WARN_SHARE = 0.1
GPU_BUSY_WARN_PCT, GPU_BUSY_FAIL_PCT = 10, 50
# NVML's used memory should grow with the allocator's reserved memory, to within this.
NVML_TRACK_TOLERANCE_BYTES = 2 * MIB


@dataclass(frozen=True)
class Check:
    """One line of the doctor's table."""

    name: str
    value: float | None  # the measured figure, in ``unit``; None when it could not be measured
    unit: str
    measured: str  # the figure as the table shows it
    reference: str  # what it is compared with
    verdict: str
    note: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "measured": self.measured,
            "reference": self.reference,
            "verdict": self.verdict,
            "note": self.note,
            "details": self.details,
        }


def overall(checks: Iterable[Check]) -> str:
    """The worst verdict of ``checks``."""
    verdicts = {check.verdict for check in checks}
    return FAIL if FAIL in verdicts else WARN if WARN in verdicts else PASS


def _valid(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def ceiling_verdict(
    measured: float | None,
    nominal: float | None,
    *,
    pass_ratio: float,
    warn_ratio: float,
    floor: float,
) -> tuple[str, str]:
    """Verdict on a measured rate (copy bandwidth, matmul rate) against its datasheet figure.

    Without a nominal figure the value is only reported, and warned on when below ``floor``
    (a value no current device of the kind gives: a debug BLAS, a wrong timer).
    """
    if not _valid(measured):
        return FAIL, "no valid measurement"
    assert measured is not None
    if nominal is None or nominal <= 0:
        if measured < floor:
            return WARN, "far below any current device of this kind"
        return PASS, "reported only"
    ratio = measured / nominal
    if ratio > ABOVE_NOMINAL:
        return WARN, f"{ratio:.0%} of nominal: above the datasheet, so the timer or the device name is wrong"
    if ratio >= pass_ratio:
        return PASS, f"{ratio:.0%} of nominal"
    if ratio >= warn_ratio:
        return WARN, f"{ratio:.0%} of nominal: throttled, shared or a lower-power variant?"
    return FAIL, f"{ratio:.0%} of nominal: far below the datasheet; every measured time will be slow"


def copy_verdict(measured_gb_s: float | None, nominal_gb_s: float | None, *, gpu: bool) -> tuple[str, str]:
    floor = GPU_COPY_FLOOR_GB_S if gpu else CPU_COPY_FLOOR_GB_S
    return ceiling_verdict(
        measured_gb_s, nominal_gb_s, pass_ratio=COPY_PASS_RATIO, warn_ratio=COPY_WARN_RATIO, floor=floor
    )


def matmul_verdict(measured_tflops: float | None, nominal_tflops: float | None, *, gpu: bool) -> tuple[str, str]:
    floor = GPU_MATMUL_FLOOR_TFLOPS if gpu else CPU_MATMUL_FLOOR_TFLOPS
    return ceiling_verdict(
        measured_tflops, nominal_tflops, pass_ratio=MATMUL_PASS_RATIO, warn_ratio=MATMUL_WARN_RATIO, floor=floor
    )


def exact_peak_verdict(expected_bytes: int, measured_bytes: int | None) -> tuple[str, str]:
    """GPU: the allocator's peak of a known allocation must be exact, to the byte."""
    if measured_bytes is None:
        return FAIL, "the allocator's peak could not be read"
    if measured_bytes == expected_bytes:
        return PASS, "exact: peak_bytes in results.csv counts what a point allocates"
    off = measured_bytes - expected_bytes
    return FAIL, f"off by {off:+d} bytes: peak_bytes in results.csv would be off as well"


def rss_peak_verdict(expected_bytes: int, measured_bytes: int | None) -> tuple[str, str]:
    """CPU: peak RSS above the baseline moves in pages, so a known allocation is read to within
    a tolerance."""
    if measured_bytes is None:
        return FAIL, "peak RSS could not be read or reset (/proc/self/clear_refs)"
    off = measured_bytes - expected_bytes
    tolerance = max(RSS_TOLERANCE_BYTES, RSS_TOLERANCE_SHARE * expected_bytes)
    if abs(off) <= tolerance:
        return PASS, f"within {abs(off) / MIB:.1f} MiB of the allocation"
    if abs(off) <= 0.5 * expected_bytes:
        return WARN, f"off by {off / MIB:+.1f} MiB: peak_bytes in results.csv is approximate here"
    return FAIL, f"off by {off / MIB:+.1f} MiB: peak_bytes in results.csv would be wrong"


def throttle_labels(mask: int) -> list[str]:
    """NVML's reason names for the bits of ``mask``; unknown bits in hex."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    return names + ([f"0x{unknown:x}"] if unknown else [])


def throttle_verdict(mask: int | None) -> tuple[str, str]:
    """Warn on any throttle reason but gpu_idle (an idle GPU lowering its clocks is normal)."""
    if mask is None:
        return WARN, "NVML unavailable: throttling cannot be seen"
    reasons = [name for name in throttle_labels(mask) if name != "gpu_idle"]
    if not reasons:
        return PASS, "no throttling" if mask == 0 else "idle only"
    why = "throttled: " + ", ".join(reasons)
    if reasons == ["sw_power_cap"]:
        return WARN, why + " (at its power limit; common under dense matmuls): compute-bound times depend on power"
    return WARN, why + ": times depend on power and temperature"


def timer_verdict(resolution_s: float | None) -> tuple[str, str]:
    """The host clock that times CPU points (and GPU launch gaps)."""
    if not _valid(resolution_s):
        return FAIL, "the clock did not advance"
    assert resolution_s is not None
    if resolution_s <= TIMER_PASS_S:
        return PASS, "fine enough for millisecond timings"
    if resolution_s <= TIMER_WARN_S:
        return WARN, "coarse: sub-millisecond points are quantised"
    return FAIL, "too coarse to time a point"


def event_verdict(resolution_s: float | None) -> tuple[str, str]:
    """The gap between two CUDA events recorded back to back; 0 when they share a timestamp."""
    if resolution_s is None or not math.isfinite(resolution_s) or resolution_s < 0:
        return FAIL, "CUDA events gave no elapsed time"
    if resolution_s <= EVENT_PASS_S:
        return PASS, "fine enough for the shortest kernels"
    return WARN, "coarse: short kernels are quantised"


def launch_verdict(launch_s: float | None) -> tuple[str, str]:
    if not _valid(launch_s):
        return WARN, "launch overhead could not be measured"
    assert launch_s is not None
    if launch_s <= LAUNCH_PASS_S:
        return PASS, "small points are timed close to their kernels"
    return WARN, "slow launches (a busy host?): small points are launch-bound"


def cpu_load_verdict(busy_cores: float, cpu_count: int) -> tuple[str, str]:
    """Other processes' CPU use while the doctor sat idle."""
    share = busy_cores / max(cpu_count, 1)
    if share < CPU_BUSY_WARN_SHARE:
        return PASS, "the machine is quiet"
    return WARN, f"other processes kept {share:.0%} of the cores busy: CPU times will be noisy"


def gpu_others_verdict(others: int, idle_utilization_pct: float | None) -> tuple[str, str]:
    """Other processes on the GPU, and kernels running while this process runs none."""
    if idle_utilization_pct is not None and idle_utilization_pct >= GPU_BUSY_FAIL_PCT:
        return FAIL, f"the GPU was {idle_utilization_pct:.0f}% busy before linbench ran anything: times are shared"
    if idle_utilization_pct is not None and idle_utilization_pct >= GPU_BUSY_WARN_PCT:
        return WARN, f"the GPU was {idle_utilization_pct:.0f}% busy before linbench ran anything"
    if others:
        return WARN, f"{others} other process(es) hold the GPU: memory and time may be shared"
    return PASS, "linbench has the GPU to itself"


def nvml_tracking_verdict(nvml_delta: int | None, reserved_delta: int, overhead: int | None) -> tuple[str, str]:
    """NVML's used memory must grow by what the allocator reserved; the rest is explained."""
    if nvml_delta is None or overhead is None:
        return WARN, "NVML unavailable: nvml_peak_bytes, clock and throttle columns will be empty"
    off = nvml_delta - reserved_delta
    if abs(off) > NVML_TRACK_TOLERANCE_BYTES:
        return WARN, (
            f"NVML grew by {nvml_delta / MIB:.0f} MiB for {reserved_delta / MIB:.0f} MiB reserved "
            "(another process allocating?)"
        )
    if overhead < 0:
        return WARN, "NVML sees less than the allocator holds"
    return PASS, "NVML tracks the allocator; the difference is the CUDA context and workspaces"
