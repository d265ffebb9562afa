"""Nsight Compute evidence for a point: the command that profiles one call under ``ncu`` and the
per-kernel summary read back from its report.

The profiled process runs one warm-up call (compilation, autotuning, library loading) with the
profiler off, then one call between ``cudaProfilerStart`` and ``cudaProfilerStop``; ``ncu`` runs
with ``--profile-from-start off``, so only that call's kernels are profiled, and with
``--clock-control none``: by default ncu locks the GPU's clocks to their base values for every
profiled kernel, while linbench times its calls at whatever clocks the GPU runs at (boost), so a
profile at base clocks would give durations no ``time_ms`` can be compared with. The summary keeps,
per kernel launch: its duration, DRAM and compute (SM) throughput as % of peak, and achieved
occupancy, from ``ncu --import REPORT --csv --page raw``.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SETS = ("basic", "detailed", "full", "source")
# Nsight Compute's metric names for the summary's columns.
METRICS = {
    "duration_us": "gpu__time_duration.sum",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "compute_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
}
SUMMARY_COLUMNS = ("kernel", *METRICS)
MISSING_NCU = "ncu (Nsight Compute) is not on PATH: install the CUDA toolkit's Nsight Compute, or put its ncu on PATH"


@dataclass(frozen=True)
class KernelProfile:
    """One profiled kernel launch: its name and the summary's figures (None where not reported)."""

    kernel: str
    duration_us: float | None
    dram_pct: float | None
    compute_pct: float | None
    occupancy_pct: float | None


def find_ncu() -> str | None:
    """The ``ncu`` on PATH, or None."""
    return shutil.which("ncu")


def profile_command(ncu: str, report: Path, section_set: str, child: Sequence[str]) -> list[str]:
    """``ncu`` profiling the calls ``child`` makes between its profiler start and stop at the clocks
    the GPU runs at (no clock locking), its report written to ``report`` (.ncu-rep), with
    ``section_set``'s sections and the metrics of the summary."""
    if section_set not in SETS:
        raise ValueError(f"unknown Nsight Compute set {section_set!r}; sets: {', '.join(SETS)}")
    metrics = ",".join(METRICS.values())
    return [
        *(ncu, "--profile-from-start", "off", "--clock-control", "none"),
        *("--set", section_set, "--metrics", metrics),
        *("--export", str(report), "--force-overwrite", *child),
    ]


def summary_command(ncu: str, report: Path) -> list[str]:
    """``ncu`` printing ``report``'s raw page as CSV: one row per kernel launch."""
    metrics = ",".join(METRICS.values())
    # Base units: the duration in nanoseconds whatever its size (parse_summary turns it into µs).
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base", "--metrics", metrics]


def parse_summary(text: str) -> list[KernelProfile]:
    """The kernel launches of ``ncu --csv --page raw``'s output (a header row, a units row, then one
    row per launch, in base units; lines before the header, ncu's own notes, are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if '"Kernel Name"' in line), None)
    if start is None:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    launches = [row for row in rows if row.get("ID", "").strip().isdigit()]  # the units row has none
    profiles = []
    for row in launches:
        duration_ns, *shares = (_number(row.get(metric)) for metric in METRICS.values())
        duration_us = None if duration_ns is None else duration_ns / 1e3
        profiles.append(KernelProfile(row["Kernel Name"], duration_us, *shares))
    return profiles


def summary_csv(profiles: Sequence[KernelProfile]) -> str:
    """The summary as CSV, the run folder's ncu-summary.csv."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    for p in profiles:
        writer.writerow([p.kernel, *(getattr(p, name) if getattr(p, name) is not None else "" for name in METRICS)])
    return out.getvalue()


def _number(value: str | None) -> float | None:
    try:
        return float(str(value).replace(",", ""))
    except (TypeError, ValueError):
        return None
