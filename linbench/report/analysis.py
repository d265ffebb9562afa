"""What a run shows: scaling exponents, crossovers against softmax, speedups, and reach.

Everything here is computed from results.csv alone (see series.py for the grouping). The
result is plain data, rendered as tables (render.py) or JSON by the commands.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from linbench.report.fit import NONE, crossover, fit_power_law
from linbench.report.load import Run
from linbench.report.series import (
    AXES,
    METRICS,
    Scenario,
    axis_column,
    baseline_names,
    impl_name,
    impl_series,
    ok_points,
    scenario_columns,
    scenarios,
)


@dataclass(frozen=True)
class FitResult:
    """time or memory ∝ axis^exponent for one impl in one scenario, by fit.py's rule.

    ``law`` is "power" (a power law over [x_min, x_max], the ``left_out`` shorter points
    overhead-bound), "flat" (no growth; ``exponent`` is the slope, near 0), "two_points" (a
    slope through two points, nothing to judge it by) or "none" (no power law found: ``exponent``
    is None, and ``r2`` that of one line through every point).
    """

    variant: str
    impl: str
    axis: str
    metric: str
    law: str
    exponent: float | None
    r2: float
    points: int
    x_min: int
    x_max: int
    left_out: int
    scenario: Scenario = field(repr=False)


@dataclass(frozen=True)
class Crossover:
    """The shortest length from which ``variant:impl`` stays faster than the fastest baseline.

    ``seq`` is None when it is not faster at the longest length both reached; when it was
    already faster at the shortest common length, ``at_shortest`` says the true crossover
    lies at or below ``seq``. ``baseline`` is the fastest baseline at ``seq`` (at
    ``speedup_seq`` when there is no crossover).

    ``speedup`` is the time of the fastest baseline at ``speedup_seq``, the longest length the
    impl and a baseline both reached, over the impl's time there; ``speedup_baseline`` names
    that baseline. The fastest baseline changes with the length (a naive recompute that wins
    at short contexts and stops at 16k), so the ratio and the name are taken at one length.
    """

    variant: str
    impl: str
    baseline: str
    seq: int | None
    at_shortest: bool
    speedup: float
    speedup_seq: int
    speedup_baseline: str
    scenario: Scenario = field(repr=False)


@dataclass(frozen=True)
class Reach:
    """The longest length an impl ran ok, and what stopped it (None: the sweep's end)."""

    variant: str
    impl: str
    max_seq: int | None
    stopped_by: str | None
    stopped_at: int | None
    scenario: Scenario = field(repr=False)


@dataclass(frozen=True)
class Speedup:
    """``report --compare-to``: the time of ``against`` over the time of ``variant:impl`` at
    one length of a scenario (above 1: faster than ``against``); None where either was not ok."""

    variant: str
    impl: str
    against: str
    seq: int
    speedup: float | None
    scenario: Scenario = field(repr=False)


@dataclass
class Analysis:
    run: str
    fits: list[FitResult]
    crossovers: list[Crossover]
    reach: list[Reach]
    speedups: list[Speedup] = field(default_factory=list)  # only with --compare-to

    def to_json(self) -> dict[str, Any]:
        record = {
            "run": self.run,
            "fits": [_flat(item) for item in self.fits],
            "crossovers": [_flat(item) for item in self.crossovers],
            "max_seq": [_flat(item) for item in self.reach],
        }
        if self.speedups:
            record["compare_to"] = [_flat(item) for item in self.speedups]
        return record


def _flat(item: FitResult | Crossover | Reach | Speedup) -> dict[str, Any]:
    record = {k: v for k, v in asdict(item).items() if k != "scenario"}
    fixed = {k: v for k, v in item.scenario.as_dict().items() if k not in record}
    return {**record, **fixed}


def analyse(run: Run, compare_to: str | None = None) -> Analysis:
    """Fits, crossovers and reach of ``run``; with ``compare_to`` ("variant:impl"), also every
    impl's speedup against it at each length."""
    results = run.results
    baselines = baseline_names(results, run.meta)
    # Time against chunk size follows no power law (it trades the C×C products against the
    # states between chunks): it is drawn, not fitted.
    fits = [fit for axis in AXES if axis != "chunk" for fit in _fits(results, axis)]
    crossovers: list[Crossover] = []
    reach: list[Reach] = []
    for scenario, rows in scenarios(results, "seq"):
        crossovers += _crossovers(scenario, rows, baselines)
        reach += [_reach(scenario, variant, impl, series) for variant, impl, series in impl_series(rows)]
    speedups = speedups_against(results, compare_to) if compare_to else []
    return Analysis(run.name, fits, crossovers, reach, speedups)


def speedups_against(results: pd.DataFrame, against: str) -> list[Speedup]:
    """At every length of every scenario where ``against`` ran ok: each other impl's speedup
    over it (its time over theirs), None where that impl has no ok time at the length."""
    found: list[Speedup] = []
    columns = scenario_columns(results, "seq")
    for values, rows in results.groupby(columns, sort=True):
        scenario = Scenario("seq", tuple(zip(columns, values, strict=True)))
        series = {impl_name(v, i): dict(ok_points(s, "seq", "time")) for v, i, s in impl_series(rows)}
        reference = series.get(against)
        if not reference:
            continue
        for name, times in series.items():
            if name == against:
                continue
            variant, _, impl = name.partition(":")
            for seq in sorted(reference):
                ratio = round(reference[seq] / times[seq], 4) if seq in times else None
                found.append(Speedup(variant, impl, against, int(seq), ratio, scenario))
    return found


def _fits(results: pd.DataFrame, axis: str) -> list[FitResult]:
    found = []
    x = axis_column(axis)
    for scenario, rows in scenarios(results, axis):
        for variant, impl, series in impl_series(rows):
            for metric in METRICS:
                fit = fit_power_law(ok_points(series, x, metric))
                if fit is not None:
                    found.append(
                        FitResult(
                            variant,
                            impl,
                            axis,
                            metric,
                            fit.law,
                            None if fit.law == NONE else round(fit.exponent, 4) + 0.0,  # never -0.0
                            round(fit.r2, 4),
                            fit.points,
                            int(fit.x_min),
                            int(fit.x_max),
                            fit.left_out,
                            scenario,
                        )
                    )
    return found


def fastest_baseline(rows: pd.DataFrame, baselines: set[str]) -> dict[int, tuple[float, str]]:
    """At each length, the lowest ok time among the baselines and which baseline it was."""
    best: dict[int, tuple[float, str]] = {}
    for variant, impl, series in impl_series(rows):
        name = impl_name(variant, impl)
        if name not in baselines:
            continue
        for seq, ms in ok_points(series, "seq", "time"):
            if int(seq) not in best or ms < best[int(seq)][0]:
                best[int(seq)] = (ms, name)
    return best


def _crossovers(scenario: Scenario, rows: pd.DataFrame, baselines: set[str]) -> list[Crossover]:
    best = fastest_baseline(rows, baselines)
    if not best:
        return []
    envelope = {seq: ms for seq, (ms, _) in best.items()}
    found = []
    for variant, impl, series in impl_series(rows):
        if impl_name(variant, impl) in baselines:
            continue
        times = {int(seq): ms for seq, ms in ok_points(series, "seq", "time")}
        common = sorted(set(times) & set(envelope))
        if not common:
            continue
        length = crossover(times, envelope)
        longest = common[-1]
        baseline_ms, speedup_baseline = best[longest]
        crossing_baseline = best[length][1] if length is not None else speedup_baseline
        speedup = round(baseline_ms / times[longest], 4)
        found.append(
            Crossover(
                variant,
                impl,
                crossing_baseline,
                length,
                length == common[0],
                speedup,
                longest,
                speedup_baseline,
                scenario,
            )
        )
    return found


def _reach(scenario: Scenario, variant: str, impl: str, series: pd.DataFrame) -> Reach:
    ordered = series.sort_values("seq")
    ok = ordered[ordered["status"] == "ok"]
    max_seq = int(ok["seq"].max()) if not ok.empty else None
    beyond = ordered if max_seq is None else ordered[ordered["seq"] > max_seq]
    failed = beyond[beyond["status"] != "ok"]
    if failed.empty:
        return Reach(variant, impl, max_seq, None, None, scenario)
    first = failed.iloc[0]
    return Reach(variant, impl, max_seq, str(first["status"]), int(first["seq"]), scenario)
