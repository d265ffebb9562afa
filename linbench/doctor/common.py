"""What the CPU and GPU halves of ``linbench doctor`` share: the probe sizes, a guard that
turns a probe's exception into a failed check, the host-load check and the copy and matmul
checks made from measured rates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from linbench.doctor import checks as rules
from linbench.doctor.checks import FAIL, MIB, Check
from linbench.machine.nominal import Nominal

# The known allocations the memory checks measure.
PEAK_PROBE_BYTES = 64 * MIB
NVML_PROBE_BYTES = 256 * MIB
# Seconds of back-to-back bf16 matmuls the GPU is held under load for the clock readings.
LOAD_S = 1.5
CPU_LOAD_WINDOW_S = 0.5


def error_check(name: str, unit: str, exc: Exception) -> Check:
    why = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    return Check(name, None, unit, "-", "-", FAIL, f"could not measure: {why}")


def guarded(name: str, unit: str, measure: Callable[[], Check]) -> Check:
    """``measure()``, or a failed check naming the error it raised."""
    try:
        return measure()
    except Exception as exc:
        return error_check(name, unit, exc)


def sig(value: float) -> str:
    """Three significant figures, thousands grouped: 2,934, 51.2, 0.873."""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def sizes(tried: tuple[int, ...]) -> str:
    return ", ".join(f"{n}³" for n in tried)


def host_load_check(name: str = "cpu load") -> Check:
    from linbench.doctor.host import other_load

    load = other_load(CPU_LOAD_WINDOW_S)
    verdict, note = rules.cpu_load_verdict(load.busy_cores, load.cpu_count)
    if load.top and load.busy_cores >= 0.01:
        note += "; busiest: " + ", ".join(f"{n} ({p}) {c:.2f}" for n, p, c in load.top)
    average = f", load average {load.load_average[0]:.2f}" if load.load_average else ""
    return Check(
        name,
        load.busy_cores,
        "cores",
        f"{load.busy_cores:.2f} of {load.cpu_count} cores busy{average}",
        f"< {rules.CPU_BUSY_WARN_SHARE:.0%} of the cores in other processes",
        verdict,
        note,
        {
            "window_s": round(load.window_s, 3),
            "cpu_count": load.cpu_count,
            "load_average": load.load_average,
            "busiest": [{"name": n, "pid": p, "cores": round(c, 3)} for n, p, c in load.top],
        },
    )


def ceiling_checks(
    device: torch.device, copy: Any, matmuls: dict[str, Any], nominal: Nominal | None, seconds: float
) -> tuple[list[Check], dict[str, Any]]:
    """The copy and matmul checks from measured rates, and the ceilings record they make."""
    from linbench.machine.ceilings import ceilings_json

    gpu = device.type == "cuda"
    reference = "no nominal figure" + ("" if gpu else " (CPU)")
    nominal_copy = nominal.bandwidth_gb_s if nominal else None
    verdict, note = rules.copy_verdict(copy.value, nominal_copy, gpu=gpu)
    ref = f"{sig(nominal_copy)} GB/s ({nominal.model} {nominal.memory})" if nominal and nominal_copy else reference
    out = [
        Check(
            "copy bandwidth",
            copy.value,
            "GB/s",
            f"{sig(copy.value)} GB/s",
            ref,
            verdict,
            f"{note}; {copy.size // MIB} MiB copied, read + write counted",
            copy.to_json(),
        )
    ]
    for dtype, rate in matmuls.items():
        nominal_rate = nominal.rate(dtype) if nominal else None
        verdict, note = rules.matmul_verdict(rate.value, nominal_rate, gpu=gpu)
        scale, unit = (1.0, "TFLOP/s") if gpu else (1e3, "GFLOP/s")
        ref = f"{sig(nominal_rate)} TFLOP/s ({nominal.model}, dense)" if nominal and nominal_rate else reference
        extra = ", TF32 off" if gpu and dtype == "fp32" and not torch.backends.cuda.matmul.allow_tf32 else ""
        out.append(
            Check(
                f"matmul {dtype}",
                rate.value * scale,
                unit,
                f"{sig(rate.value * scale)} {unit}",
                ref,
                verdict,
                f"{note}; {rate.size}³{extra}" + (f", the best of {sizes(rate.tried)}" if len(rate.tried) > 1 else ""),
                rate.to_json(),
            )
        )
    record = ceilings_json(device, copy, matmuls, source="doctor", seconds=seconds)
    return out, record
