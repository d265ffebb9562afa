"""One row per point per run: the time the gate would judge for that point in that run, with what
orders the run (its commit and when it ran) and the environment that may split a series.

The time is the gate's (gate/statistic.py): each process's CUDA-graph replay time where it has
one, else on a CPU each one-thread process's CPU time, else its p20, else its median; the
observation keeps each of these that the run recorded (the median over the point's processes,
oversubscribed processes left out as the gate leaves them out, gate/points.Side.of), so that a
series can be judged on the one statistic every run of it has (series.py).

A point the run has a row for that is not ok (oom, timeout, mismatch, error, crashed, skipped) is
an observation too, with its status and no time: the newest run's verdict names a point that was
ok before and is not now (verdict.py), and a run none of whose points is ok is still a run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from statistics import median
from typing import Any

import pandas as pd

from linbench.gate.compare import MATCH_COLUMNS
from linbench.gate.points import Side
from linbench.gate.statistic import COLUMN, CPU_TIME, GRAPH, MEDIAN, P20
from linbench.report.load import Run

# The statistics in the order the gate prefers them (statistic.chosen).
STATISTICS = (GRAPH, CPU_TIME, P20, MEDIAN)
# The column of each statistic in an observation (and in a history file).
STAT_FIELD = {GRAPH: "graph_ms", CPU_TIME: "cpu_ms", P20: "p20_ms", MEDIAN: "median_ms"}


OK = "ok"


@dataclass(frozen=True)
class Environment:
    """What a run was measured on, and how, as far as a change in it makes two runs' times
    incomparable: the device model, its driver, torch, the cores, the memory, the ceilings
    linbench measured before the sweep (bandwidth and matmul rate: a machine whose ceilings moved
    by more than CEILING_RATIO is not the machine it was), and the settings it was timed with:
    the point's torch threads (results.csv's ``threads``: the gate does not judge a point
    measured with other threads, gate/points.py), whether the run timed CUDA-graph replays
    (meta.json's ``timing.cuda_graph``) and its repeated-process protocol (``timing_protocol``'s
    name, which the gate refuses to compare across). Empty where the run did not record it."""

    device_name: str = ""
    driver: str = ""
    torch: str = ""
    cpu_count: str = ""
    device_memory_bytes: str = ""
    copy_gb_per_s: float | None = None
    matmul_tflops: float | None = None
    threads: str = ""
    cuda_graph: str = ""
    timing_protocol: str = ""

    @classmethod
    def of(cls, meta: dict[str, Any]) -> Environment:
        ceilings = _section(meta, "ceilings")
        rates = _section(ceilings, "matmul_tflops")
        dtype = str(_section(_section(meta, "sweep"), "settings").get("dtype", "fp32")).split(",")[0]
        return cls(
            device_name=str(meta.get("device_name") or ""),
            driver=str(meta.get("driver_version") or ""),
            torch=str(meta.get("torch") or ""),
            cpu_count=str(meta.get("cpu_count") or ""),
            device_memory_bytes=str(meta.get("device_memory_bytes") or ""),
            copy_gb_per_s=_number(ceilings.get("copy_gb_per_s")),
            matmul_tflops=_number(rates.get(dtype, next(iter(rates.values()), None))),
            cuda_graph=_flag(_section(meta, "timing").get("cuda_graph")),
            timing_protocol=cell_text(_section(meta, "timing_protocol").get("name")),
        )


@dataclass(frozen=True)
class Observation:
    """One point of one run. ``key`` holds the gate's match columns (the device as its type) and
    the device model; the statistics are None where the run recorded none (always, for a point
    whose ``status`` is not ok)."""

    key: tuple[str, ...]
    run: str
    commit: str
    commit_time: str
    started_at: str
    environment: Environment
    processes: int
    graph_ms: float | None = None
    cpu_ms: float | None = None
    p20_ms: float | None = None
    median_ms: float | None = None
    status: str = OK

    @property
    def ok(self) -> bool:
        return self.status == OK

    def value(self, statistic: str) -> float | None:
        return getattr(self, STAT_FIELD[statistic])

    def record(self) -> dict[str, Any]:
        """The observation as one flat row (a history file's row, store.py)."""
        row = dict(zip(KEY_FIELDS, self.key, strict=True))
        row |= {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("key", "environment")}
        return row | {f"env_{name}": value for name, value in asdict(self.environment).items()}

    @classmethod
    def from_record(cls, row: dict[str, Any]) -> Observation:
        environment = Environment(**{f.name: _cell(f.name, row.get(f"env_{f.name}")) for f in fields(Environment)})
        own = {f.name: _cell(f.name, row.get(f.name)) for f in fields(cls) if f.name not in ("key", "environment")}
        own["processes"] = int(own["processes"] or 0)
        own["status"] = own["status"] or OK  # a history file of schema 1 held ok points alone
        key = tuple(cell_text(row.get(name)) for name in KEY_FIELDS)
        return cls(key=key, environment=environment, **own)


KEY_FIELDS = (*MATCH_COLUMNS, "device_name")
_FLOAT_FIELDS = {"graph_ms", "cpu_ms", "p20_ms", "median_ms", "copy_gb_per_s", "matmul_tflops"}


def of_run(run: Run) -> list[Observation]:
    """Every point of ``run``: each ok point with a time, and each point that is not ok (its
    status, no time). An ok row without a time is left out."""
    meta = run.meta
    base = Observation(
        key=(),
        run=run.name,
        commit=str(meta.get("git_sha") or ""),
        commit_time=str(meta.get("git_commit_time") or ""),
        started_at=str(meta.get("started_at") or ""),
        environment=Environment.of(meta),
        processes=0,
    )
    groups = _process_groups(run)
    found = [_observation(base, key, row, groups) for key, row in point_rows(run)]
    return [o for o in found if o is not None]


def point_rows(run: Run) -> list[tuple[tuple[str, ...], pd.Series]]:
    """Each point's last results row with its key (KEY_FIELDS: the gate's match columns, the
    device as its type, and the device model), as observations key them."""
    results = run.results.copy()
    results["device_type"] = results["device"].astype(str).str.split(":").str[0]
    last = results.drop_duplicates(list(MATCH_COLUMNS), keep="last")
    return [(tuple(cell_text(row.get(name)) for name in KEY_FIELDS), row) for _, row in last.iterrows()]


def _observation(
    base: Observation, key: tuple[str, ...], row: pd.Series, groups: dict[tuple, pd.DataFrame]
) -> Observation | None:
    """The observation of one results row of the run ``base`` stands for; None for an ok row
    without a time."""
    match = tuple(row[c] for c in MATCH_COLUMNS)
    environment = replace(base.environment, threads=cell_text(row.get("threads")))
    if row["status"] != OK:
        return replace(base, key=key, environment=environment, status=cell_text(row["status"]))
    side = Side.of(row, groups.get(match))
    values = _values(side, row)
    if not any(v is not None for v in values.values()):
        return None
    return replace(base, key=key, environment=environment, processes=max(side.count(), 1), **values)


def of_folders(paths: list[Path]) -> list[Observation]:
    """Every observation of the runs under ``paths``; ReportInputError for a run with a row
    left out (torn, malformed: report/load.py), which would drop its point from its series."""
    from linbench.report.load import find_run_dirs, read_run

    return [obs for path in paths for folder in find_run_dirs(path) for obs in of_run(read_run(folder, "history"))]


def _values(side: Side, row: pd.Series) -> dict[str, Any]:
    """Each statistic's median over the side's processes, where every process recorded it."""
    values: dict[str, float | None] = {}
    available = {
        GRAPH: side.has_graph_times(),
        CPU_TIME: side.has_cpu_time(),
        P20: side.has_p20(),
        MEDIAN: True,
    }
    for statistic in STATISTICS:
        numbers = side.per_process(COLUMN[statistic]) if available[statistic] else []
        positive = [n for n in numbers if n == n and n > 0]  # NaN never equals itself
        values[STAT_FIELD[statistic]] = float(median(positive)) if positive else None
    return values


def _process_groups(run: Run) -> dict[tuple, pd.DataFrame]:
    if run.processes is None or run.processes.empty:
        return {}
    frame = run.processes.copy()
    frame["device_type"] = frame["device"].astype(str).str.split(":").str[0]
    frame = frame.drop_duplicates([*MATCH_COLUMNS, "process"], keep="last")
    frame = frame[(frame["status"] == "ok") & (frame["time_ms"] > 0)]
    return {key: rows for key, rows in frame.groupby(list(MATCH_COLUMNS), sort=False)}


def _section(mapping: dict[str, Any], name: str) -> dict[str, Any]:
    """meta.json's section ``name``, or an empty one where it is missing or not a table."""
    section = mapping.get(name)
    return section if isinstance(section, dict) else {}


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number == number else None


def _flag(value: object) -> str:
    """A recorded yes or no as text (``true``, ``false``); empty where none was recorded."""
    return "" if value is None else str(bool(value)).lower()


def cell_text(value: object) -> str:
    """A key cell as text, the same from a run's typed columns and from a history file's strings."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _cell(name: str, value: object) -> Any:
    if name in _FLOAT_FIELDS:
        return _number(value)
    return cell_text(value)
