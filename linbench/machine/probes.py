"""The two ceilings of a device, measured: copy bandwidth and matmul rate.

Shared by ``linbench doctor`` and by ``linbench run``, which records them in meta.json.
A copy counts the bytes it reads plus the bytes it writes (2 × the buffer), the convention
of STREAM's copy and of nvbandwidth; a matmul of n×n by n×n counts 2·n³ FLOPs. On GPU each
repetition is timed with CUDA events, after warm-up, and the median is kept; on CPU the
monotonic clock times each one.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from linbench.dtypes import torch_dtype

MIB = 1 << 20
GIB = 1 << 30
GPU_COPY_BYTES = GIB
GPU_MATMUL_N = 8192
CPU_COPY_MIN_BYTES, CPU_COPY_MAX_BYTES = 128 * MIB, 512 * MIB
CPU_MATMUL_START_N, CPU_MATMUL_MAX_N = 256, 4096
# CPU matmul size: doubled while the rate rises by more than CPU_MATMUL_GAIN, until one call
# takes CPU_MATMUL_STOP_S.
CPU_MATMUL_STOP_S = 0.05
CPU_MATMUL_GAIN = 0.05


@dataclass(frozen=True)
class Rate:
    """A measured rate and how it was measured."""

    value: float  # GB/s for a copy, TFLOP/s for a matmul
    median_ms: float
    reps: int
    size: int  # bytes of the copied buffer, or n of the n×n matmul
    tried: tuple[int, ...] = ()  # every n a sized CPU matmul tried, the best kept

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "median_ms": self.median_ms, "reps": self.reps, "size": self.size}
        return out | ({"tried": list(self.tried)} if self.tried else {})


def event_times_ms(
    fn: Callable[[], object], device: torch.device, *, warmup: int = 3, reps: int = 10, min_s: float = 0.0
) -> list[float]:
    """CUDA-event milliseconds of ``fn`` per repetition, back to back after ``warmup`` calls;
    repeated for at least ``min_s`` seconds (a sustained load) and ``reps`` times."""
    with torch.cuda.device(device):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize(device)
        times: list[float] = []
        start = time.perf_counter()
        while len(times) < reps or time.perf_counter() - start < min_s:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
    return times


def clock_times_ms(fn: Callable[[], object], *, warmup: int = 1, reps: int = 5) -> list[float]:
    """Monotonic-clock milliseconds of ``fn`` per repetition (CPU)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return times


def _l3_bytes() -> int:
    """The largest CPU cache, from sysfs (0 where it is not exposed)."""
    largest = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            size = (index / "size").read_text().strip()
            unit = {"K": 1024, "M": MIB}.get(size[-1:], 1)
            largest = max(largest, int(size.rstrip("KM")) * unit)
        except (OSError, ValueError):
            continue
    return largest


def cpu_copy_bytes() -> int:
    """A CPU copy large enough to miss every cache (4 × the largest), yet affordable."""
    from linbench.machine.limits import available_memory_bytes

    wanted = min(max(CPU_COPY_MIN_BYTES, 4 * _l3_bytes()), CPU_COPY_MAX_BYTES)
    with contextlib.suppress(OSError, RuntimeError):
        wanted = min(wanted, available_memory_bytes() // 8)
    return max(wanted // MIB, 1) * MIB


def copy_rate(device: torch.device, nbytes: int | None = None, reps: int | None = None) -> Rate:
    """Copy bandwidth of ``device`` in GB/s (1e9 bytes/s), read and write bytes counted."""
    gpu = device.type == "cuda"
    if nbytes is None:
        if gpu:
            free, _ = torch.cuda.mem_get_info(device)
            nbytes = min(GPU_COPY_BYTES, max(free // 4, MIB) // MIB * MIB)
        else:
            nbytes = cpu_copy_bytes()
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    copy = lambda: dst.copy_(src)  # noqa: E731
    times = event_times_ms(copy, device, reps=reps or 10) if gpu else clock_times_ms(copy, reps=reps or 5)
    median = statistics.median(times)
    return Rate(2 * nbytes / (median * 1e-3) / 1e9, median, len(times), nbytes)


def matmul_rate(
    device: torch.device, dtype: str, n: int | None = None, reps: int | None = None, min_s: float = 0.0
) -> Rate:
    """Matmul rate of ``device`` in TFLOP/s for ``dtype`` (n×n by n×n, 2·n³ FLOPs).

    GPU: n = 8192 unless given; ``min_s`` keeps it busy that long (a sustained load). CPU,
    unless n is given: n doubles from 256 while the rate still rises and a call takes under
    50 ms, and the best rate is kept. A small matmul is slow on a CPU whose cores are busy
    elsewhere (its thread pool waits for the slowest thread), and a dtype without hardware
    support (bf16 on most CPUs) is slow at every size, so this reaches the rate without
    spending seconds on it. A doubling that gains under 5% has reached the plateau: on a
    quiet 2-core EPYC the fp32 rate peaked at n = 512 (0.19-0.20 TFLOP/s), 1024 and 2048
    gave 0.97-1.02 of it, and the 2048 step alone took 0.4-0.5 s of a run's start (five
    measurements in a row went to 512, 2048, 512, 1024 and 1024 by whether the noise of
    three calls made a doubling 1-2% faster; the rates kept read 0.192-0.202).
    """
    gpu = device.type == "cuda"
    if gpu or n is not None:
        return _matmul_at(device, dtype, n or GPU_MATMUL_N, reps or (10 if gpu else 5), min_s)
    size, best, tried = CPU_MATMUL_START_N, None, []
    while True:
        rate = _matmul_at(device, dtype, size, reps or 3, 0.0)
        tried.append(size)
        if best is not None and rate.value <= best.value * (1 + CPU_MATMUL_GAIN):  # the plateau
            return replace(max(best, rate, key=lambda r: r.value), tried=tuple(tried))
        best = rate
        if rate.median_ms >= CPU_MATMUL_STOP_S * 1e3 or size >= CPU_MATMUL_MAX_N:
            return replace(best, tried=tuple(tried))
        size *= 2


def _matmul_at(device: torch.device, dtype: str, size: int, reps: int, min_s: float) -> Rate:
    dt = torch_dtype(dtype)
    a = torch.randn(size, size, device=device).to(dt)
    b = torch.randn(size, size, device=device).to(dt)
    out = torch.empty(size, size, dtype=dt, device=device)
    mm = lambda: torch.mm(a, b, out=out)  # noqa: E731
    if device.type == "cuda":
        times = event_times_ms(mm, device, reps=reps, min_s=min_s)
    else:
        times = clock_times_ms(mm, reps=reps)
    median = statistics.median(times)
    return Rate(2 * size**3 / (median * 1e-3) / 1e12, median, len(times), size)
