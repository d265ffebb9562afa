"""Two runs point by point: is the current one slower, larger or launching more, beyond its
thresholds and its noise?

Time is judged by the spread between each point's worker processes (compare_rule.py): a
change must pass both the noise those processes show and ``max_slowdown``; a point too noisy
to judge is ``noisy`` and a run without process data ``unverified``, and neither fails.
Where a point was timed as CUDA-graph replays on both sides, that is the time judged, and
the eager time is judged beside it by the same rule. Memory readings and kernel launches per
call are exact and compared against their thresholds alone (memory above a floor for CPU
peak RSS, which moves by allocator pages between identical runs). A point that was ok and
now is not (oom, mismatch, crash...) is a regression too. Control points that all moved the
same way say the machine changed, not the code (compare_drift.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from linbench.report.compare_drift import DriftCheck, check_drift
from linbench.report.compare_rule import TimeJudgement, TimeRule, judge
from linbench.report.fit import POWER, fit_power_law
from linbench.report.load import Run
from linbench.report.series import ok_points, plain, scenarios
from linbench.sweep.points import KEY_COLUMNS

# Points match on their axes; cuda:0 and cuda:1 match, so device is compared by type.
MATCH_COLUMNS = tuple(c if c != "device" else "device_type" for c in KEY_COLUMNS)
# Identical CPU runs differ by up to ~0.7 MiB of peak RSS at small sizes (measured).
CPU_MEMORY_FLOOR_BYTES = 1 << 20
TIME_FAILURES = ("regression",)


class CompareError(ValueError):
    """The two runs cannot be compared (no common points, different devices...)."""


@dataclass(frozen=True)
class Thresholds:
    max_slowdown: float = 0.05
    max_memory_growth: float = 0.02
    memory_floor_bytes: int | None = None  # None: CPU_MEMORY_FLOOR_BYTES on CPU, 0 on GPUs
    max_exponents: dict[str, float] = field(default_factory=dict)  # "cosine" or "cosine:chunked"
    noise_z: float = 5.0
    max_noise: float = 0.30
    min_processes: int = 3
    max_launch_growth: float = 0.0  # kernel launches per call are exact: any growth fails
    controls: tuple[str, ...] = ()  # "variant:impl" of the drift check's control points

    def floor_for(self, device_type: str) -> int:
        if self.memory_floor_bytes is not None:
            return self.memory_floor_bytes
        return CPU_MEMORY_FLOOR_BYTES if device_type == "cpu" else 0

    @property
    def time_rule(self) -> TimeRule:
        return TimeRule(self.max_slowdown, self.noise_z, self.max_noise, self.min_processes)


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
    time_verdict: str  # regression, slower, faster, same, noisy, unverified, broken, fixed, not compared
    eager_ratio: float | None  # graph-timed points: the eager time, judged by the same rule
    eager_verdict: str  # as time_verdict, or - where the eager time is the judged one
    base_bytes: float | None
    bytes: float | None
    memory_growth: float | None
    memory_verdict: str  # same, smaller, larger, regression, -
    base_kernels: float | None
    kernels: float | None
    launch_verdict: str  # same, fewer, more, regression, -

    @property
    def time_regressed(self) -> bool:
        return self.time_verdict in TIME_FAILURES or self.eager_verdict in TIME_FAILURES

    @property
    def hard_regressed(self) -> bool:
        """A regression no change of machine explains: broken, memory, launches."""
        return self.time_verdict == "broken" or "regression" in (self.memory_verdict, self.launch_verdict)

    @property
    def regressed(self) -> bool:
        return self.hard_regressed or self.time_regressed


@dataclass(frozen=True)
class ExponentCheck:
    """A fitted time-in-length exponent against its bound. ``law`` is fit.py's verdict; where it
    found no power law, ``exponent`` is the slope of one line through every point, and the
    bound still applies to it: a gate errs on the side of failing."""

    variant: str
    impl: str
    bound_name: str
    bound: float
    exponent: float
    r2: float
    fixed: dict[str, Any]
    law: str = POWER
    points: int = 0  # the points of the law (or of the one line, where there is none)

    @property
    def regressed(self) -> bool:
        return self.exponent > self.bound


@dataclass
class Comparison:
    baseline: str
    current: str
    points: list[PointDiff]
    baseline_only: list[dict[str, Any]]
    current_only: list[dict[str, Any]]
    exponents: list[ExponentCheck]
    drift: DriftCheck | None = None

    @property
    def environment_changed(self) -> bool:
        return self.drift is not None and self.drift.changed

    @property
    def regressions(self) -> list[PointDiff]:
        """The points that fail the gate: time regressions are excused when the environment changed."""
        if self.environment_changed:
            return [p for p in self.points if p.hard_regressed]
        return [p for p in self.points if p.regressed]

    @property
    def failed(self) -> bool:
        return bool(self.regressions) or any(check.regressed for check in self.exponents)

    @property
    def verdict(self) -> str:
        if self.failed:
            return "regression"
        return "environment changed" if self.environment_changed else "pass"

    def count(self, verdict: str) -> int:
        return sum(p.time_verdict == verdict for p in self.points)

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "current": self.current,
            "verdict": self.verdict,
            "noisy": self.count("noisy"),
            "unverified": self.count("unverified"),
            "points": [{**p.key, **{k: v for k, v in asdict(p).items() if k != "key"}} for p in self.points],
            "baseline_only": self.baseline_only,
            "current_only": self.current_only,
            "exponents": [{**asdict(c), "regressed": c.regressed} for c in self.exponents],
            "drift": self.drift.to_json() if self.drift is not None else None,
        }


def device_names(run: Run) -> set[str]:
    return set(run.results["device_name"].astype(str))


def check_same_device(baseline: Run, current: Run) -> None:
    """CompareError when the runs come from different device models."""
    base, cur = device_names(baseline), device_names(current)
    if base != cur:
        raise CompareError(
            f"the runs come from different devices ({', '.join(sorted(base))} against {', '.join(sorted(cur))}); "
            "pass --force to compare them anyway"
        )


def _with_device_type(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["device_type"] = frame["device"].astype(str).str.split(":").str[0]
    frame["causal"] = frame["causal"].astype(bool)
    return frame


def _keyed(results: pd.DataFrame) -> pd.DataFrame:
    frame = _with_device_type(results)
    return frame.drop_duplicates(list(MATCH_COLUMNS), keep="last").set_index(list(MATCH_COLUMNS))


def _process_groups(run: Run) -> dict[tuple, pd.DataFrame]:
    """Each point's ok processes with a time (a resumed process counted once), by match key."""
    if run.processes is None or run.processes.empty:
        return {}
    frame = _with_device_type(run.processes)
    frame = frame.drop_duplicates([*MATCH_COLUMNS, "process"], keep="last")
    frame = frame[(frame["status"] == "ok") & (frame["time_ms"] > 0)]
    return {key: rows for key, rows in frame.groupby(list(MATCH_COLUMNS), sort=False)}


def compare_runs(baseline: Run, current: Run, thresholds: Thresholds) -> Comparison:
    base, cur = _keyed(baseline.results), _keyed(current.results)
    common = base.index.intersection(cur.index, sort=False)
    if common.empty:
        raise CompareError(f"{baseline.path} and {current.path} have no point in common (same variant, impl, shape...)")
    base_procs, cur_procs = _process_groups(baseline), _process_groups(current)
    points = [
        _diff(
            dict(zip(MATCH_COLUMNS, key, strict=True)),
            Side(base.loc[key], base_procs.get(key)),
            Side(cur.loc[key], cur_procs.get(key)),
            thresholds,
        )
        for key in common
    ]
    controls = (*thresholds.controls, *declared_controls(current))
    drift = check_drift(points, controls, thresholds.max_slowdown, required=thresholds.controls) if controls else None
    return Comparison(
        baseline=str(baseline.path),
        current=str(current.path),
        points=points,
        baseline_only=_keys(base.index.difference(cur.index, sort=False)),
        current_only=_keys(cur.index.difference(base.index, sort=False)),
        exponents=check_exponents(current, thresholds.max_exponents),
        drift=drift,
    )


def declared_controls(run: Run) -> tuple[str, ...]:
    """The control impls the run's suite declares (``controls = [...]``), from its meta.json."""
    sweep = run.meta.get("sweep")
    settings = sweep.get("settings") if isinstance(sweep, dict) else None
    listed = settings.get("controls") if isinstance(settings, dict) else None
    return tuple(str(c) for c in listed) if isinstance(listed, list) else ()


def _keys(index: pd.Index) -> list[dict[str, Any]]:
    return [{c: plain(v) for c, v in zip(MATCH_COLUMNS, key, strict=True)} for key in index]


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


@dataclass(frozen=True)
class Side:
    """One run's view of a point: its results row and its ok processes (None: none recorded)."""

    row: pd.Series
    processes: pd.DataFrame | None

    @property
    def ok(self) -> bool:
        return self.row["status"] == "ok"

    def count(self) -> int:
        return 0 if self.processes is None else len(self.processes)

    def has_graph_times(self) -> bool:
        return self.processes is not None and bool((self.processes["device_ms"] > 0).all())

    def medians(self, column: str) -> list[float]:
        """The process medians of ``column``; the results row's own where no process was recorded."""
        if self.processes is not None:
            return [float(v) for v in self.processes[column]]
        value = _number(self.row.get(column))
        return [value] if value is not None and value > 0 else []

    def largest(self, column: str) -> float | None:
        """The results row's value, or the largest of its processes' where that is larger."""
        values = [_number(self.row.get(column))]
        if self.processes is not None and column in self.processes:
            values += [_number(v) for v in self.processes[column]]
        present = [v for v in values if v is not None]
        return max(present) if present else None


def _diff(key: dict[str, Any], base: Side, cur: Side, thresholds: Thresholds) -> PointDiff:
    key = {c: plain(v) for c, v in key.items()}
    both_ok = base.ok and cur.ok
    graph = base.has_graph_times() and cur.has_graph_times()
    column = "device_ms" if graph else "time_ms"
    rule = thresholds.time_rule
    time = judge(base.medians(column), cur.medians(column), rule) if both_ok else TimeJudgement("-", None)
    eager = judge(base.medians("time_ms"), cur.medians("time_ms"), rule) if both_ok and graph else None
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


def check_exponents(run: Run, bounds: dict[str, float]) -> list[ExponentCheck]:
    """The fitted time-in-length exponent of every series each bound names."""
    checks: list[ExponentCheck] = []
    results = run.results
    for name, bound in bounds.items():
        variant, _, impl = name.partition(":")
        chosen = results[(results["variant"] == variant) & ((results["impl"] == impl) if impl else True)]
        if chosen.empty:
            raise CompareError(f"--max-exponent {name}={bound:g}: {run.path} has no {name} points")
        before = len(checks)
        for scenario, rows in scenarios(chosen, "seq"):
            for (v, i), series in rows.groupby(["variant", "impl"], sort=False):
                fit = fit_power_law(ok_points(series, "seq", "time"))
                if fit is not None:
                    checks.append(
                        ExponentCheck(
                            v,
                            i,
                            name,
                            bound,
                            round(fit.exponent, 4),
                            round(fit.r2, 4),
                            scenario.as_dict(),
                            fit.law,
                            fit.points,
                        )
                    )
        if len(checks) == before:
            raise CompareError(f"--max-exponent {name}={bound:g}: no {name} series in {run.path} has two ok lengths")
    return checks
