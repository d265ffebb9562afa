"""``linbench doctor``'s checks, run on one device: can this machine's numbers be trusted?

On CPU (a few seconds): other processes' load, the clock's resolution, the peak-RSS method
against a known allocation, copy bandwidth and fp32 matmul rate. On a GPU (under 20 s):
other processes on the device, the allocator's peak of a known allocation, NVML's used
memory against the allocator's, copy bandwidth, fp32 and bf16 matmul rates against the
datasheet, SM clock, power and throttling idle and under the bf16 load, CUDA-event
resolution and launch overhead, and the host's load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from linbench.doctor import checks as rules
from linbench.doctor.checks import FAIL, MIB, Check, overall
from linbench.doctor.common import PEAK_PROBE_BYTES, ceiling_checks, error_check, guarded, host_load_check


@dataclass
class DoctorReport:
    device: str
    device_name: str
    checks: list[Check]
    seconds: float
    ceilings: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return overall(self.checks)

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict == FAIL else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "device_name": self.device_name,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 2),
            "checks": [check.to_json() for check in self.checks],
            "ceilings": self.ceilings,
        }


def diagnose(device: torch.device) -> DoctorReport:
    """Every check for ``device`` (cpu or a resolved cuda:N)."""
    from linbench.machine.facts import device_name

    start = time.perf_counter()
    name = device_name(device)
    if device.type == "cuda":
        from linbench.doctor.gpu_checks import gpu_checks

        checks, ceilings = gpu_checks(device, name)
    else:
        checks, ceilings = _cpu_checks(device)
    return DoctorReport(str(device), name, checks, time.perf_counter() - start, ceilings)


def timer_check() -> Check:
    from linbench.doctor.host import perf_counter_resolution

    clock = perf_counter_resolution()
    verdict, note = rules.timer_verdict(clock.resolution_s)
    return Check(
        "timer",
        clock.resolution_s * 1e9,
        "ns",
        f"{clock.resolution_s * 1e9:.0f} ns steps, {clock.read_s * 1e9:.0f} ns a read",
        f"≤ {rules.TIMER_PASS_S * 1e6:.0f} µs (time.perf_counter)",
        verdict,
        note,
        {"resolution_s": clock.resolution_s, "read_s": clock.read_s},
    )


def rss_peak_check() -> Check:
    from linbench.measure.memory import PeakRSS, release_free_heap

    release_free_heap()
    try:
        with PeakRSS() as peak:
            block = torch.ones(PEAK_PROBE_BYTES // 4)  # every page written
            del block
        measured: int | None = peak.peak_bytes
    except OSError:
        measured = None
    verdict, note = rules.rss_peak_verdict(PEAK_PROBE_BYTES, measured)
    return Check(
        "allocator peak",
        None if measured is None else measured / MIB,
        "MiB",
        "-" if measured is None else f"{measured / MIB:.1f} MiB for {PEAK_PROBE_BYTES // MIB} MiB",
        f"{PEAK_PROBE_BYTES // MIB} MiB allocated (peak RSS, as run reads it)",
        verdict,
        note,
        {"expected_bytes": PEAK_PROBE_BYTES, "measured_bytes": measured},
    )


def _cpu_checks(device: torch.device) -> tuple[list[Check], dict[str, Any]]:
    from linbench.machine.probes import copy_rate, matmul_rate

    checks = [
        guarded("cpu load", "cores", host_load_check),  # first, while nothing of ours runs
        guarded("timer", "ns", timer_check),
        guarded("allocator peak", "MiB", rss_peak_check),
    ]
    ceilings: dict[str, Any] = {}
    start = time.perf_counter()
    try:
        with torch.random.fork_rng(devices=[]):
            copy, matmuls = copy_rate(device), {"fp32": matmul_rate(device, "fp32")}
        found, ceilings = ceiling_checks(device, copy, matmuls, None, time.perf_counter() - start)
        checks += found
    except Exception as exc:
        checks.append(error_check("copy bandwidth", "GB/s", exc))
    return checks, ceilings
