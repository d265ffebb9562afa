"""The report's table of what a GPU point's time and energy were made of: the kernels' own
device time beside the event time (the rest the host's), the kernels that ran, and the joules
per call, average power and tokens per joule (results.csv's kernel_ms, energy_j, ...)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from linbench.report.load import Run
from linbench.report.render import ReportTable
from linbench.units import as_number, format_ms, format_size

SERIES = ("variant", "impl", "mode", "causal", "dtype", "batch", "heads", "dim_k", "dim_v")
SPLIT_COLUMNS = ("kernel_ms", "energy_j")
HEADER = ["impl", "mode", "dtype", "shape", "backend", "time", "kernels", "host", "J/call", "W", "tokens/J"]


def device_split_tables(run: Run) -> list[ReportTable]:
    """Each series at its longest ok length where a kernel time or an energy was read; none
    (an empty list) for a run without them (a CPU run, an older run)."""
    results = run.results
    if not set(SPLIT_COLUMNS) & set(results.columns):
        return []
    read = results[(results["status"] == "ok") & _any_present(results)]
    if read.empty:
        return []
    longest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in read.to_dict("records"):
        key = tuple(record.get(c) for c in SERIES)
        if key not in longest or int(record["seq"]) > int(longest[key]["seq"]):
            longest[key] = record
    title = (
        "Kernels and energy: the kernels' own device time of a call beside its time (the rest is the host's), "
        "and the joules per call from NVML's counter; each series at its longest ok length"
    )
    return [ReportTable(title, HEADER, [_row(r) for r in longest.values()])]


def _any_present(results: pd.DataFrame) -> pd.Series:
    present = pd.Series(False, index=results.index)
    for column in SPLIT_COLUMNS:
        if column in results.columns:
            present |= results[column].notna()
    return present


def _row(r: dict[str, Any]) -> list[str]:
    time_ms, kernel_ms = as_number(r.get("time_ms")), as_number(r.get("kernel_ms"))
    host = "-"
    if time_ms and kernel_ms is not None:
        host = f"{format_ms(time_ms - kernel_ms)} ({100 * (time_ms - kernel_ms) / time_ms:.0f}%)"
    energy, power, per_joule = (as_number(r.get(c)) for c in ("energy_j", "power_w", "tokens_per_j"))
    return [
        f"{r['variant']}:{r['impl']}",
        str(r["mode"]),
        str(r["dtype"]),
        f"B{r['batch']} H{r['heads']} S{format_size(int(r['seq']))} D{r['dim_k']}",
        str(r.get("backend") or "-"),
        format_ms(time_ms),
        format_ms(kernel_ms) if kernel_ms is not None else "-",
        host,
        f"{energy:.3g}" if energy is not None else "-",
        f"{power:.0f}" if power is not None else "-",
        f"{per_joule:.3g}" if per_joule is not None else "-",
    ]
