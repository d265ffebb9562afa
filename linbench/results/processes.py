"""A point measured in several worker processes, summed up as one results row.

Repetitions inside one process share that process's state (host speed, placement, clocks),
so they move together: a tight process is not a precise point. The process is therefore the
unit of replication (docs/gate.md): a point's time is the median of its process medians,
and its noise is the spread between those medians, not within them. How many processes a
point gets, and when the gate trusts them, is the protocol's (protocol.py).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

# 1.4826·MAD estimates a normal distribution's standard deviation robustly.
MAD_TO_SIGMA = 1.4826


def log_spread(medians: Sequence[float]) -> float | None:
    """1.4826·MAD of the log medians (≈ the relative standard deviation between processes);
    None with fewer than two."""
    logs = [math.log(m) for m in medians if m and m > 0]
    if len(logs) < 2:
        return None
    centre = statistics.median(logs)
    return MAD_TO_SIGMA * statistics.median(abs(x - centre) for x in logs)


def gated_ms(process: Mapping[str, Any]) -> float | None:
    """The time a gate judges for one process: its CUDA-graph replay time where it has one,
    else its eager median."""
    for column in ("device_ms", "time_ms"):
        value = _number(process.get(column))
        if value is not None and value > 0:
            return value
    return None


def _number(value: Any) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _numbers(processes: Sequence[Mapping[str, Any]], column: str) -> list[float]:
    return [n for p in processes if (n := _number(p.get(column))) is not None]


def summarise(processes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The results columns of a point from its processes (all ok): the median of the process
    medians and percentiles, the largest memory reading, the repetitions summed, and the
    spread between processes. Columns measured once (the gate's, a decode state's size, the
    kernel count) come from the first process that has them."""
    if not processes:
        raise ValueError("a point needs at least one process to sum up")
    graph = all(_number(p.get("device_ms")) for p in processes)
    medians = _numbers(processes, "time_ms")
    gated = [g for p in processes if (g := gated_ms(p)) is not None]
    row: dict[str, Any] = {
        "status": "ok",
        "time_ms": _median(medians),
        "time_ms_p20": _median(_numbers(processes, "time_ms_p20")),
        "time_ms_p80": _median(_numbers(processes, "time_ms_p80")),
        "samples": int(sum(_numbers(processes, "samples"))),
        "processes": len(processes),
        "time_ms_proc_lo": min(medians) if medians else None,
        "time_ms_proc_hi": max(medians) if medians else None,
        "between_spread": log_spread(gated),
        "timing": "graph" if graph else "eager",
        "device_ms": _median(_numbers(processes, "device_ms")) if graph else None,
        "sm_clock_mhz": _median(_numbers(processes, "sm_clock_mhz")),
        "temp_c": max(_numbers(processes, "temp_c"), default=None),
    }
    for column in ("peak_bytes", "reserved_bytes", "nvml_peak_bytes"):
        values = _numbers(processes, column)
        row[column] = int(max(values)) if values else None
    for column in ("cuda_graph", "graph_error", "kernels_per_call", "threads", "state_bytes", "compile_s"):
        row[column] = next((p[column] for p in processes if p.get(column) not in (None, "")), None)
    row["throttle_reasons"] = ";".join(
        sorted({r for p in processes for r in str(p.get("throttle_reasons") or "").split(";") if r})
    )
    notes = sorted({str(p["error"]) for p in processes if p.get("error")})
    row["error"] = "; ".join(notes)
    return row
