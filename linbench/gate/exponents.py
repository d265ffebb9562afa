"""Fitted time-in-length exponents of the current run against their bounds (``linbench compare
--max-exponent``): an impl that turned quadratic fails even where each single point stayed
under the time threshold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
                fit = fit_power_law(ok_points(series, "seq", "time"))
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
                        )
                    )
        if len(checks) == before:
            raise ExponentError(f"--max-exponent {name}={bound:g}: no {name} series in {run.path} has two ok lengths")
    return checks
