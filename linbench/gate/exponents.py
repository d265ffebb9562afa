"""Fitted time-in-length exponents of the current run against their bounds (``linbench compare
--max-exponent``): an impl that turned quadratic fails even where each single point stayed
under the time threshold. A CPU series is fitted on the time the gate judges (statistic.py):
results.csv's ``time_ms_p20``, the median of its processes' p20s, where every point of it has
one; else on its medians, as a GPU series is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from linbench.gate.statistic import COLUMN, MEDIAN, P20, all_positive
from linbench.report.fit import POWER, fit_power_law
from linbench.report.load import Run
from linbench.report.series import ok_points, scenarios


class ExponentError(ValueError):
    """A bound on a variant the run lacks, or on a series with fewer than two ok lengths."""


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
    statistic: str = MEDIAN  # the time fitted: p20 (a CPU series that recorded it) or median

    @property
    def regressed(self) -> bool:
        return self.exponent > self.bound


def check_exponents(run: Run, bounds: dict[str, float]) -> list[ExponentCheck]:
    """The fitted time-in-length exponent of every series each bound names."""
    checks: list[ExponentCheck] = []
    results = run.results
    for name, bound in bounds.items():
        variant, _, impl = name.partition(":")
        chosen = results[(results["variant"] == variant) & ((results["impl"] == impl) if impl else True)]
        if chosen.empty:
            raise ExponentError(f"--max-exponent {name}={bound:g}: {run.path} has no {name} points")
        before = len(checks)
        for scenario, rows in scenarios(chosen, "seq"):
            for (v, i), series in rows.groupby(["variant", "impl"], sort=False):
                statistic, timed = judged_series(series)
                fit = fit_power_law(ok_points(timed, "seq", "time"))
                if fit is not None:
                    checks.append(
                        ExponentCheck(
                            str(v),
                            str(i),
                            name,
                            bound,
                            round(fit.exponent, 4),
                            round(fit.r2, 4),
                            scenario.as_dict(),
                            fit.law,
                            fit.points,
                            statistic,
                        )
                    )
        if len(checks) == before:
            raise ExponentError(f"--max-exponent {name}={bound:g}: no {name} series in {run.path} has two ok lengths")
    return checks


def judged_series(series: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """A series as the gate judges its time: on a CPU whose every ok point recorded a p20,
    with that p20 as its time; else as it is (medians)."""
    ok = series[series["status"] == "ok"]
    on_cpu = bool(ok["device"].astype(str).str.startswith("cpu").all()) if len(ok) else False
    if not on_cpu or "time_ms_p20" not in ok.columns or not all_positive(list(ok["time_ms_p20"])):
        return MEDIAN, series
    return P20, series.assign(time_ms=series[COLUMN[P20]])
