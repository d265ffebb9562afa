"""``linbench doctor`` on a GPU: other processes on the device, the allocator's peak of a known
allocation, NVML against the allocator, copy bandwidth, fp32 and bf16 matmul rates against
the datasheet, clocks and throttling idle and under load, CUDA-event resolution and launch
overhead."""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from linbench.doctor import checks as rules
from linbench.doctor.checks import MIB, Check
from linbench.doctor.common import (
    LOAD_S,
    NVML_PROBE_BYTES,
    PEAK_PROBE_BYTES,
    ceiling_checks,
    error_check,
    guarded,
    host_load_check,
)
from linbench.machine.nominal import nominal_for


def gpu_checks(device: torch.device, name: str) -> tuple[list[Check], dict[str, Any]]:
    from linbench.doctor.nvml_probe import NvmlDevice

    index = device.index if device.index is not None else torch.cuda.current_device()
    nvml = NvmlDevice(index)
    try:
        with torch.cuda.device(device):
            return _gpu_checks_on(device, name, nvml)
    finally:
        nvml.close()
        torch.cuda.empty_cache()


def _gpu_checks_on(device: torch.device, name: str, nvml: Any) -> tuple[list[Check], dict[str, Any]]:
    from linbench.machine.probes import copy_rate, matmul_rate

    # Before this process runs anything on the device: who else is there, and is it busy?
    idle = nvml.snapshot()
    checks = [
        guarded("gpu processes", "processes", lambda: _processes_check(nvml, idle)),
        guarded("host load", "cores", lambda: host_load_check("host load")),
        guarded("clocks idle", "MHz", lambda: _clock_check("clocks idle", idle, nvml, None)),
        guarded("allocator peak", "bytes", lambda: _cuda_peak_check(device)),
    ]
    nominal = nominal_for(name)
    sixteen = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    ceilings: dict[str, Any] = {}
    start = time.perf_counter()
    try:
        copy = copy_rate(device)
        fp32 = matmul_rate(device, "fp32")
        from linbench.doctor.nvml_probe import LoadSampler

        with LoadSampler(nvml) as sampler:
            half = matmul_rate(device, sixteen, min_s=LOAD_S)
        matmuls = {"fp32": fp32, sixteen: half}
        found, ceilings = ceiling_checks(device, copy, matmuls, nominal, time.perf_counter() - start)
        checks += found
        checks.append(
            guarded("clocks under load", "MHz", lambda: _clock_check("clocks under load", idle, nvml, sampler))
        )
    except Exception as exc:
        checks.append(error_check("copy bandwidth", "GB/s", exc))
    checks.append(guarded("event timer", "µs", lambda: _event_check(device)))
    checks.append(guarded("launch overhead", "µs", lambda: _launch_check(device)))
    # After the loads, so that the CUDA context holds the kernels and cuBLAS state a measured
    # point also loads; shown beside the allocator's check.
    nvml_check = guarded("nvml vs allocator", "MiB", lambda: _nvml_check(device, nvml))
    checks.insert(next(n for n, c in enumerate(checks) if c.name == "allocator peak") + 1, nvml_check)
    return checks, ceilings


def _processes_check(nvml: Any, idle: Any) -> Check:
    import os

    if not nvml.available:
        return Check("gpu processes", None, "processes", "-", "none but linbench", rules.WARN, nvml.error or "")
    others = [(pid, used) for pid, used in idle.processes if pid != os.getpid()]
    verdict, note = rules.gpu_others_verdict(len(others), idle.utilization_pct)
    listed = ", ".join(f"pid {pid}" + (f" {used / MIB:.0f} MiB" if used else "") for pid, used in others[:4])
    busy = "" if idle.utilization_pct is None else f"; {idle.utilization_pct}% busy"
    return Check(
        "gpu processes",
        float(len(others)),
        "processes",
        f"{len(others)} other{busy}",
        "none but linbench; idle before linbench runs",
        verdict,
        note + (f" ({listed})" if listed else ""),
        {"others": [{"pid": p, "used_bytes": u} for p, u in others], "idle_utilization_pct": idle.utilization_pct},
    )


def _clock_check(name: str, idle: Any, nvml: Any, sampler: Any) -> Check:
    if not nvml.available:
        return Check(name, None, "MHz", "-", "-", rules.WARN, nvml.error or "NVML unavailable")
    if sampler is None:
        clock, low, power, temp, mask = idle.sm_clock_mhz, None, idle.power_w, idle.temp_c, idle.throttle_mask
        samples = 1
    else:
        summary = sampler.summary()
        clock, low, power = summary["sm_clock_mhz"], summary["min_sm_clock_mhz"], summary["max_power_w"]
        temp, mask, samples = summary["max_temp_c"], summary["throttle_mask"], summary["samples"]
    verdict, note = rules.throttle_verdict(mask)
    parts = [f"{clock:.0f} MHz" + (f" (min {low:.0f})" if low is not None and low != clock else "")]
    parts += [f"{power:.0f} W"] if power is not None else []
    parts += [f"{temp} °C"] if temp is not None else []
    ref = []
    if idle.max_sm_clock_mhz:
        ref.append(f"max {idle.max_sm_clock_mhz} MHz")
    if idle.power_limit_w:
        ref.append(f"power limit {idle.power_limit_w:.0f} W")
    if sampler is not None:
        note += f"; {samples} samples during {LOAD_S:g} s of matmuls"
    return Check(
        name,
        None if clock is None else float(clock),
        "MHz",
        ", ".join(parts),
        ", ".join(ref) or "-",
        verdict,
        note,
        {
            "sm_clock_mhz": clock,
            "min_sm_clock_mhz": low,
            "power_w": power,
            "temp_c": temp,
            "throttle_mask": mask,
            "throttle_reasons": rules.throttle_labels(mask or 0),
            "max_sm_clock_mhz": idle.max_sm_clock_mhz,
            "power_limit_w": idle.power_limit_w,
        },
    )


def _cuda_peak_check(device: torch.device) -> Check:
    from linbench.measure.cuda_memory import CudaPeak

    held = torch.empty(MIB, dtype=torch.uint8, device=device)  # held before: must not count
    with CudaPeak(device) as peak:
        block = torch.empty(PEAK_PROBE_BYTES, dtype=torch.uint8, device=device)
        del block
    del held
    verdict, note = rules.exact_peak_verdict(PEAK_PROBE_BYTES, peak.peak_bytes)
    return Check(
        "allocator peak",
        float(peak.peak_bytes),
        "bytes",
        f"{peak.peak_bytes:,} B",
        f"{PEAK_PROBE_BYTES:,} B allocated (max_memory_allocated delta)",
        verdict,
        note,
        {"expected_bytes": PEAK_PROBE_BYTES, "measured_bytes": peak.peak_bytes},
    )


def _nvml_check(device: torch.device, nvml: Any) -> Check:
    import os

    # The fill kernel runs once first: CUDA loads a kernel's module lazily, into device memory
    # that NVML counts and the allocator does not.
    torch.ones(MIB, dtype=torch.uint8, device=device)
    torch.cuda.empty_cache()
    torch.cuda.synchronize(device)
    reserved_before, used_before = torch.cuda.memory_reserved(device), nvml.used_bytes()
    block = torch.ones(NVML_PROBE_BYTES, dtype=torch.uint8, device=device)
    torch.cuda.synchronize(device)
    reserved, used = torch.cuda.memory_reserved(device), nvml.used_bytes()
    own = dict(nvml.processes()).get(os.getpid())
    del block
    if used is None or used_before is None:
        verdict, note = rules.nvml_tracking_verdict(None, 0, None)
        return Check("nvml vs allocator", None, "MiB", "-", "NVML used − allocator reserved", verdict, note)
    # This process's own figure where NVML shows it (not across PID namespaces); else the device's.
    seen, scope = (own, "this process") if own else (used, "the whole device")
    overhead = seen - reserved
    verdict, note = rules.nvml_tracking_verdict(used - used_before, reserved - reserved_before, overhead)
    note += (
        f"; NVML ({scope}) {seen / MIB:,.0f} MiB = reserved {reserved / MIB:,.0f} MiB + {overhead / MIB:,.0f} MiB"
        "; results.csv's nvml_peak_bytes includes this difference"
    )
    return Check(
        "nvml vs allocator",
        overhead / MIB,
        "MiB",
        f"{overhead / MIB:,.0f} MiB beyond the allocator",
        "NVML used − allocator reserved: CUDA context + workspaces",
        verdict,
        note,
        {
            "nvml_used_bytes": used,
            "nvml_process_bytes": own,
            "reserved_bytes": reserved,
            "overhead_bytes": overhead,
            "nvml_delta_bytes": used - used_before,
            "reserved_delta_bytes": reserved - reserved_before,
            "scope": scope,
        },
    )


def _event_check(device: torch.device) -> Check:
    """The gap between two events recorded back to back, queued behind a busy kernel so the
    device reaches them one right after the other (on an idle device the gap would be the
    host's time between the two record calls)."""

    busy_cycles = int(torch.cuda.get_device_properties(device).clock_rate * 1000 * 50e-6)  # ~50 µs
    intervals = []
    for _ in range(30):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(busy_cycles)
        begin.record()
        end.record()
        end.synchronize()
        intervals.append(begin.elapsed_time(end) * 1e3)  # µs
    median = statistics.median(intervals)
    verdict, note = rules.event_verdict(median * 1e-6)
    return Check(
        "event timer",
        median,
        "µs",
        f"{median:.2f} µs between back-to-back events (min {min(intervals):.2f})",
        f"≤ {rules.EVENT_PASS_S * 1e6:.0f} µs",
        verdict,
        note,
        {"median_us": median, "min_us": min(intervals), "max_us": max(intervals), "pairs": len(intervals)},
    )


def _launch_check(device: torch.device) -> Check:
    launches = 500
    empty = lambda: torch.cuda._sleep(0)  # noqa: E731 - a kernel that does nothing
    for _ in range(20):
        empty()
    torch.cuda.synchronize(device)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    begin.record()
    for _ in range(launches):
        empty()
    end.record()
    host_us = (time.perf_counter() - t0) / launches * 1e6
    end.synchronize()
    device_us = begin.elapsed_time(end) * 1e3 / launches
    verdict, note = rules.launch_verdict(host_us * 1e-6)
    return Check(
        "launch overhead",
        host_us,
        "µs",
        f"{host_us:.1f} µs a launch (host), {device_us:.1f} µs a kernel (device)",
        f"≤ {rules.LAUNCH_PASS_S * 1e6:.0f} µs",
        verdict,
        note,
        {"host_us": host_us, "device_us": device_us, "launches": launches},
    )
