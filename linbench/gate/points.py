"""One point of two runs compared: its time (by the rule of rule.py, on the CUDA-graph
replay time where both sides have one, with the eager time beside it), its memory and its
kernel launches per call, each with a verdict. A CPU point whose threads other processes
oversubscribed on either side (results.csv's ``oversubscribed``) has its time not judged:
its verdict is ``oversubscribed``, which never fails; its memory still is."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from linbench.gate.rule import TimeJudgement, TimeRule, judge
from linbench.report.series import plain
from linbench.results.protocol import ProcessProtocol
from linbench.units import as_number

# Identical CPU runs differ by up to ~0.7 MiB of peak RSS at small sizes (measured).
CPU_MEMORY_FLOOR_BYTES = 1 << 20
TIME_FAILURES = ("regression",)
OVERSUBSCRIBED = "oversubscribed"


@dataclass(frozen=True)
class Thresholds:
    max_slowdown: float = 0.05
    max_memory_growth: float = 0.02
    memory_floor_bytes: int | None = None  # None: CPU_MEMORY_FLOOR_BYTES on CPU, 0 on GPUs
    max_exponents: dict[str, float] = field(default_factory=dict)  # "cosine" or "cosine:chunked"
    noise_z: float = 5.0
    max_noise: float = 0.30
    max_launch_growth: float = 0.0  # kernel launches per call are exact: any growth fails
    controls: tuple[str, ...] = ()  # "variant:impl" of the drift check's control points

    def floor_for(self, device_type: str) -> int:
        if self.memory_floor_bytes is not None:
            return self.memory_floor_bytes
        return CPU_MEMORY_FLOOR_BYTES if device_type == "cpu" else 0

    def time_rule(self, protocol: ProcessProtocol) -> TimeRule:
        """The time rule of these thresholds, for processes recorded under ``protocol``."""
        return TimeRule(self.max_slowdown, self.noise_z, self.max_noise, protocol)


@dataclass(frozen=True)
class PointDiff:
    key: dict[str, Any]
    base_status: str
    status: str
    base_ms: float | None  # the judged time: the median of the process medians
    ms: float | None
    ratio: float | None
    timing: str  # graph (CUDA-graph replays judged) or eager
    base_processes: int
    processes: int
    spread: float | None  # σ̂ between processes, in log
    noise: float | None  # N: the change noise alone can make
    threshold: float | None  # T = max(max_slowdown, N)
    settled: bool | None  # False: a side's processes disagree and are too few to trust their spread
    # regression, slower, faster, same, noisy, unverified, oversubscribed, broken, fixed, not compared
    time_verdict: str
    eager_ratio: float | None  # graph-timed points: the eager time, judged by the same rule
    # As time_verdict, or - where the eager time is the judged one. Information only: where a
    # CUDA graph timed the point, its eager time is mostly the host issuing launches, which
    # moves between processes (docs/gate.md); added launches fail through launch_verdict.
    eager_verdict: str
    base_bytes: float | None
    bytes: float | None
    memory_growth: float | None
    memory_verdict: str  # same, smaller, larger, regression, -
    base_kernels: float | None
    kernels: float | None
    launch_verdict: str  # same, fewer, more, regression, -

    @property
    def time_regressed(self) -> bool:
        return self.time_verdict in TIME_FAILURES

    @property
    def hard_regressed(self) -> bool:
        """A regression no change of machine explains: broken, memory, launches."""
        return self.time_verdict == "broken" or "regression" in (self.memory_verdict, self.launch_verdict)

    @property
    def regressed(self) -> bool:
        return self.hard_regressed or self.time_regressed


@dataclass(frozen=True)
class Side:
    """One run's view of a point: its results row and its ok processes (None: none recorded)."""

    row: pd.Series
    processes: pd.DataFrame | None

    @property
    def ok(self) -> bool:
        return self.row["status"] == "ok"

    @property
    def oversubscribed(self) -> bool:
        """Other processes took cores this side's worker threads needed while it was timed."""
        return str(self.row.get("oversubscribed")) == "True"

    def count(self) -> int:
        return 0 if self.processes is None else len(self.processes)

    def has_graph_times(self) -> bool:
        return self.processes is not None and bool((self.processes["device_ms"] > 0).all())

    def medians(self, column: str) -> list[float]:
        """The process medians of ``column``; the results row's own where no process was recorded."""
        if self.processes is not None:
            return [float(v) for v in self.processes[column]]
        value = as_number(self.row.get(column))
        return [value] if value is not None and value > 0 else []

    def largest(self, column: str) -> float | None:
        """The results row's value, or the largest of its processes' where that is larger."""
        values = [as_number(self.row.get(column))]
        if self.processes is not None and column in self.processes:
            values += [as_number(v) for v in self.processes[column]]
        present = [v for v in values if v is not None]
        return max(present) if present else None


def diff_point(
    key: dict[str, Any], base: Side, cur: Side, thresholds: Thresholds, protocol: ProcessProtocol
) -> PointDiff:
    """One point of two runs judged, its processes by the numbers of ``protocol``."""
    key = {c: plain(v) for c, v in key.items()}
    both_ok = base.ok and cur.ok
    graph = base.has_graph_times() and cur.has_graph_times()
    column = "device_ms" if graph else "time_ms"
    rule = thresholds.time_rule(protocol)
    time = judge(base.medians(column), cur.medians(column), rule) if both_ok else TimeJudgement("-", None)
    eager = judge(base.medians("time_ms"), cur.medians("time_ms"), rule) if both_ok and graph else None
    if both_ok and (base.oversubscribed or cur.oversubscribed):
        time = replace(time, verdict=OVERSUBSCRIBED)
        eager = replace(eager, verdict=OVERSUBSCRIBED) if eager is not None else None
    base_bytes, cur_bytes = base.largest("peak_bytes"), cur.largest("peak_bytes")
    growth = (cur_bytes - base_bytes) / base_bytes if both_ok and base_bytes and cur_bytes is not None else None
    base_kernels, kernels = base.largest("kernels_per_call"), cur.largest("kernels_per_call")
    return PointDiff(
        key=key,
        base_status=str(base.row["status"]),
        status=str(cur.row["status"]),
        base_ms=_median(base.medians(column)) if base.ok else None,
        ms=_median(cur.medians(column)) if cur.ok else None,
        ratio=time.ratio,
        timing="graph" if graph else "eager",
        base_processes=base.count(),
        processes=cur.count(),
        spread=time.spread,
        noise=time.noise,
        threshold=time.threshold,
        settled=time.settled,
        time_verdict=_status_verdict(base, cur) or time.verdict,
        eager_ratio=eager.ratio if eager else None,
        eager_verdict=eager.verdict if eager else "-",
        base_bytes=base_bytes,
        bytes=cur_bytes,
        memory_growth=growth,
        memory_verdict=_memory_verdict(base_bytes, cur_bytes, growth, thresholds, key["device_type"]),
        base_kernels=base_kernels if both_ok else None,
        kernels=kernels if both_ok else None,
        launch_verdict=_launch_verdict(base_kernels, kernels, thresholds.max_launch_growth) if both_ok else "-",
    )


def _median(values: list[float]) -> float | None:
    return float(pd.Series(values).median()) if values else None


def _status_verdict(base: Side, cur: Side) -> str | None:
    """The verdict the statuses alone decide (None when both are ok: the time rule decides)."""
    if base.ok and not cur.ok:
        return "broken"
    if not base.ok:
        return "fixed" if cur.ok else "not compared"
    return None


def _memory_verdict(
    base: float | None, cur: float | None, growth: float | None, thresholds: Thresholds, device_type: str
) -> str:
    if growth is None or base is None or cur is None:
        return "-"
    if growth > thresholds.max_memory_growth and cur - base > thresholds.floor_for(device_type):
        return "regression"
    if cur > base:
        return "larger"
    return "smaller" if cur < base else "same"


def _launch_verdict(base: float | None, cur: float | None, max_growth: float) -> str:
    """Kernels per call are counted, not sampled: any growth past ``max_growth`` fails."""
    if base is None or cur is None:
        return "-"
    if cur > base * (1 + max_growth):
        return "regression"
    if cur > base:
        return "more"
    return "fewer" if cur < base else "same"
