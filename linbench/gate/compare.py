"""Two runs point by point: is the current one slower, larger or launching more, beyond its
thresholds and its noise?

Time is judged by the spread between each point's worker processes (rule.py): a
change must pass both the noise those processes show and ``max_slowdown``; a point too noisy
to judge is ``noisy`` and a run without process data ``unverified``, and neither fails.
Where a point was timed as CUDA-graph replays on both sides, that is the time judged, and
the eager time is judged beside it by the same rule. Memory readings and kernel launches per
call are exact and compared against their thresholds alone (memory above a floor for CPU
peak RSS, which moves by allocator pages between identical runs). A point that was ok and
now is not (oom, mismatch, crash...) is a regression too. Control points that all moved the
same way say the machine changed, not the code (drift.py).

How many processes a side needs to be judged, and when its spread is trusted, are the numbers of
the repeated-process protocol each run recorded in meta.json (``timing_protocol``; the defaults
for a run made before the record), so a run is judged by the protocol it was measured under.
Where the two runs recorded different numbers, each is taken at the stricter of the two (see
``judging_protocol``); runs that name different protocols are not compared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from linbench.gate.drift import DriftCheck, check_drift
from linbench.gate.points import CPU_MEMORY_FLOOR_BYTES, PointDiff, Side, Thresholds, diff_point
from linbench.report.fit import POWER, fit_power_law
from linbench.report.load import Run
from linbench.report.series import ok_points, plain, scenarios
from linbench.results.meta import timing_protocol
from linbench.results.protocol import ProcessProtocol, ProtocolError
from linbench.results.schema import KEY_COLUMNS

__all__ = ["CPU_MEMORY_FLOOR_BYTES", "CompareError", "Comparison", "PointDiff", "Thresholds", "compare_runs"]

# Points match on their axes; cuda:0 and cuda:1 match, so device is compared by type.
MATCH_COLUMNS = tuple(c if c != "device" else "device_type" for c in KEY_COLUMNS)


class CompareError(ValueError):
    """The two runs cannot be compared (no common points, different devices...)."""


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
    protocol: ProcessProtocol = field(default_factory=ProcessProtocol)  # the one the points were judged by

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
            "oversubscribed": self.count("oversubscribed"),
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
    protocol = judging_protocol(baseline, current)
    base_procs, cur_procs = _process_groups(baseline), _process_groups(current)
    points = [
        diff_point(
            dict(zip(MATCH_COLUMNS, key, strict=True)),
            Side(base.loc[key], base_procs.get(key)),
            Side(cur.loc[key], cur_procs.get(key)),
            thresholds,
            protocol,
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
        protocol=protocol,
    )


def recorded_protocol(run: Run) -> ProcessProtocol:
    """The repeated-process protocol ``run`` recorded in its meta.json (the defaults where it
    recorded none); CompareError for a record that cannot be read."""
    try:
        return timing_protocol(run.meta)
    except ProtocolError as exc:
        raise CompareError(f"{run.path}: {exc}") from None


def judging_protocol(baseline: Run, current: Run) -> ProcessProtocol:
    """The protocol the two runs' processes are judged by together. Where their records differ
    in a number, the stricter one holds (the larger ``min_to_judge`` and ``trust_processes``,
    the smaller ``extend_above``): each side's processes then meet both runs' protocols, and a
    difference can make a point noisy or unverified, never a regression. Runs that name
    different protocols measured by different rules: CompareError."""
    base, cur = recorded_protocol(baseline), recorded_protocol(current)
    if base.name != cur.name:
        raise CompareError(
            f"the runs were measured under different timing protocols ({base.name} against {cur.name}); "
            "measure one again with the linbench that measured the other"
        )
    return base.stricter(cur)


def declared_controls(run: Run) -> tuple[str, ...]:
    """The control impls the run's suite declares (``controls = [...]``), from its meta.json;
    none for a side of a linbench ab, whose two sides shared the machine and the job."""
    if "ab" in run.meta:
        return ()
    sweep = run.meta.get("sweep")
    settings = sweep.get("settings") if isinstance(sweep, dict) else None
    listed = settings.get("controls") if isinstance(settings, dict) else None
    return tuple(str(c) for c in listed) if isinstance(listed, list) else ()


def _keys(index: pd.Index) -> list[dict[str, Any]]:
    return [{c: plain(v) for c, v in zip(MATCH_COLUMNS, key, strict=True)} for key in index]


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
