"""A point measured in several worker processes, summed up as one results row.

Repetitions inside one process share that process's state (host speed, placement, clocks),
so they move together: a tight process is not a precise point. The process is therefore the
unit of replication (docs/gate.md): a point's time is the median of its process medians,
and its noise is the spread between those medians, not within them. How many processes a
point gets, and when the gate trusts them, is the protocol's (protocol.py). How each column
combines over the processes is its declaration's ``combine`` (schema.py); the rules are here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from linbench.results.schema import COLUMNS, KEY_COLUMNS, PROCESS_COLUMNS, Column
from linbench.units import as_number

# 1.4826·MAD estimates a normal distribution's standard deviation robustly.
MAD_TO_SIGMA = 1.4826
# The standard error of a median is √(π/2) ≈ 1.2533 times that of a mean (normal data).
MEDIAN_SE_FACTOR = 1.2533
# A process's own columns of processes.csv: all but the point's key.
PROCESS_FIELDS = PROCESS_COLUMNS[len(KEY_COLUMNS) :]


@dataclass(frozen=True)
class ProcessResult:
    """What one worker process measured for one point, or how it failed (``status``: crashed,
    timeout, error, oom, ...): the measured columns of processes.csv, the worker's pid and
    repetitions, and what the runner adds when it records the process (its index among the
    point's processes, its wall and timed seconds). A correctness gate's result is one too
    (``status``, ``rel_err``, ``error``). Fields are the declared columns of the same name."""

    status: str
    error: str | None = None
    time_ms: float | None = None
    time_ms_p20: float | None = None
    time_ms_p80: float | None = None
    samples: int | None = None
    peak_bytes: int | None = None
    reserved_bytes: int | None = None
    nvml_peak_bytes: int | None = None
    sm_clock_mhz: float | None = None
    temp_c: float | None = None
    throttle_reasons: str | None = None
    cuda_graph: bool | None = None
    device_ms: float | None = None
    graph_error: str | None = None
    kernels_per_call: int | None = None
    host_syncs: int | None = None
    threads: int | None = None
    state_bytes: int | None = None
    compile_s: float | None = None
    rel_err: float | None = None
    check_seq: int | None = None
    pid: int | None = None
    process: int | None = None
    wall_s: float | None = None
    timed_s: float | None = None
    neighbour_cpu: float | None = None
    oversubscribed: bool | None = None
    cpu_ms_p20: float | None = None
    alloc_peak_bytes: int | None = None
    alloc_call_timed: bool | None = None
    # A one-thread CPU process's calls over a reference call's (linbench/measure/pace.py).
    paced_p20: float | None = None
    pace_ms: float | None = None
    pace_work: str | None = None
    # decode as it is served (linbench/variants/serving.py)
    state_bytes_per_request: int | None = None
    accepted_per_step: float | None = None
    state_drift: float | None = None
    drift_steps: int | None = None
    memory_budget_bytes: int | None = None
    graph_pools: int | None = None
    backend: str | None = None
    kernel_ms: float | None = None
    kernel_names: str | None = None
    energy_j: float | None = None
    power_w: float | None = None
    energy_window_s: float | None = None
    energy_updates: int | None = None
    power_limit_w: float | None = None
    mem_clock_mhz: float | None = None
    device_split_note: str | None = None
    # Triton impls' autotuning (linbench/measure/autotune.py)
    triton_configs: str | None = None
    triton_config_source: str | None = None
    autotune_s: float | None = None
    # The timed repetitions, for samples.csv; a recorded process keeps none.
    samples_ms: tuple[float, ...] = ()

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ProcessResult:
        """The process a processes.csv row (or a one-process results row) records, each cell
        typed by its column's declaration; columns the row lacks stay empty."""
        values = {name: COLUMNS[name].parse(row.get(name)) for name in PROCESS_FIELDS if name in row}
        return cls(**(values | {"status": str(row["status"])}))

    def columns(self) -> dict[str, Any]:
        """The process's columns of processes.csv, its point's key aside."""
        return {name: getattr(self, name) for name in PROCESS_FIELDS}


def log_spread(medians: Sequence[float]) -> float | None:
    """1.4826·MAD of the log medians (≈ the relative standard deviation between processes);
    None with fewer than two."""
    logs = [math.log(m) for m in medians if m and m > 0]
    if len(logs) < 2:
        return None
    centre = statistics.median(logs)
    return MAD_TO_SIGMA * statistics.median(abs(x - centre) for x in logs)


def median_difference_se(spread: float, base_count: int, count: int) -> float:
    """The standard error of the log ratio of two sides' medians, ``base_count`` and ``count``
    processes spread ``spread`` (σ̂, in log): 1.2533·σ̂·√(1/K_b + 1/K_c)."""
    return MEDIAN_SE_FACTOR * spread * math.sqrt(1 / base_count + 1 / count)


def timed_on_cpu_clock(process: ProcessResult) -> bool:
    """Whether a CPU process's CPU time stands for its work (cpu_time_stands)."""
    return cpu_time_stands(process.cpu_ms_p20, process.threads)


def cpu_time_stands(cpu_ms_p20: object, threads: object) -> bool:
    """Whether a process (or a results row) with these cells is judged on its CPU time: it has
    one, and ran one torch thread (several threads wait for each other in a spinning pool, which
    counts as CPU time and grows when a sibling is preempted; linbench/gate/statistic.py)."""
    cpu_ms = as_number(cpu_ms_p20)
    return cpu_ms is not None and cpu_ms > 0 and as_number(threads) == 1


def gated_ms(process: ProcessResult, cpu: bool = False) -> float | None:
    """The time a gate judges for one process: its CUDA-graph replay time where it has one,
    else on a CPU (``cpu``) its CPU time where that stands for its work, else its p20, which
    preemption moves least (linbench/gate/statistic.py), else its eager median."""
    cpu_time = process.cpu_ms_p20 if cpu and timed_on_cpu_clock(process) else None
    for value in (process.device_ms, cpu_time, process.time_ms_p20 if cpu else None, process.time_ms):
        number = as_number(value)
        if number is not None and number > 0:
            return number
    return None


def paced_alike(processes: Sequence[ProcessResult]) -> bool:
    """Whether there are processes and every one recorded a paced time (a positive
    ``paced_p20``, linbench/measure/pace.py), each against the same reference work."""
    return pace_cells_alike([p.paced_p20 for p in processes], [p.pace_work for p in processes])


def pace_cells_alike(paced: Sequence[object], works: Sequence[object]) -> bool:
    """``paced_alike`` on processes.csv's cells: the ``paced_p20`` and ``pace_work`` of each
    process (a missing work may read as NaN)."""
    every_named = bool(works) and all(isinstance(w, str) and w for w in works)
    numbers = [as_number(v) for v in paced]
    return every_named and len(set(works)) == 1 and all(n is not None and n > 0 for n in numbers)


def gated_figures(processes: Sequence[ProcessResult], cpu: bool = False) -> list[float]:
    """Each process's figure the gate judges, alike for all: on a CPU, where every process was
    paced against the same reference (``paced_alike``), its paced CPU time (in reference
    calls); else each one's ``gated_ms``. Only the spread of these is read (their log
    max/min), so a figure that is not milliseconds serves."""
    if cpu and paced_alike(processes) and all(timed_on_cpu_clock(p) for p in processes):
        return [float(p.paced_p20) for p in processes if p.paced_p20 is not None]
    return [g for p in processes if (g := gated_ms(p, cpu)) is not None]


def summarise(processes: Sequence[ProcessResult]) -> dict[str, Any]:
    """The results columns of a point from its processes (all ok), each combined as its
    column declares: the median of the process medians and percentiles, the largest memory
    reading, the repetitions summed, the spread between processes; columns measured once
    (a decode state's size, the kernel count) from the first process that has them. The
    point's own, gate and rate columns are record.py's."""
    if not processes:
        raise ValueError("a point needs at least one process to sum up")
    return {c.name: COMBINERS[c.combine](processes, c) for c in COLUMNS.values() if c.combine in COMBINERS}


def _numbers(processes: Sequence[ProcessResult], name: str) -> list[float]:
    return [n for p in processes if (n := as_number(getattr(p, name))) is not None]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _as_kind(column: Column, value: float | None) -> Any:
    return int(value) if value is not None and column.kind is int else value


def _graphed(processes: Sequence[ProcessResult]) -> bool:
    """Every process has a CUDA-graph time: the point is judged by those."""
    return all(as_number(p.device_ms) for p in processes)


def _first(processes: Sequence[ProcessResult], column: Column) -> Any:
    return next((value for p in processes if (value := getattr(p, column.name)) not in (None, "")), None)


def _union(processes: Sequence[ProcessResult], column: Column) -> str:
    reasons = {r for p in processes for r in str(getattr(p, column.name) or "").split(";") if r}
    return ";".join(sorted(reasons))


def _any(processes: Sequence[ProcessResult], column: Column) -> bool | None:
    """True when any process's flag is; None when no process has one (a GPU point)."""
    flags = [value for p in processes if (value := getattr(p, column.name)) is not None]
    return any(flags) if flags else None


def _notes(processes: Sequence[ProcessResult], column: Column) -> str:
    return "; ".join(sorted({str(note) for p in processes if (note := getattr(p, column.name))}))


Combine = Callable[[Sequence[ProcessResult], Column], Any]
# schema.COMBINES's rules over processes (key, point, gate, rate and process columns are not
# combined: record.py and the runner fill them).
COMBINERS: dict[str, Combine] = {
    "first": _first,
    "median": lambda ps, c: _as_kind(c, _median(_numbers(ps, c.name))),
    "max": lambda ps, c: _as_kind(c, max(_numbers(ps, c.name), default=None)),
    "sum": lambda ps, c: _as_kind(c, sum(_numbers(ps, c.name))),
    "union": _union,
    "any": _any,
    "notes": _notes,
    "count": lambda ps, c: len(ps),
    "fastest": lambda ps, c: min(_numbers(ps, "time_ms"), default=None),
    "slowest": lambda ps, c: max(_numbers(ps, "time_ms"), default=None),
    "spread": lambda ps, c: log_spread([g for p in ps if (g := gated_ms(p)) is not None]),
    "timing": lambda ps, c: "graph" if _graphed(ps) else "eager",
    "graph": lambda ps, c: _median(_numbers(ps, c.name)) if _graphed(ps) else None,
}
