"""Two runs point by point: is the current one slower, beyond its thresholds and its noise?

A time regression needs both a slowdown past ``max_slowdown`` and a measured one: the
current p20–p80 interval must lie wholly above the baseline's, so that a slowdown inside
the repetitions' own spread is never called a regression. Memory readings are exact and
compared against their threshold alone, above a floor for CPU peak RSS, which moves by
allocator pages between identical runs. A point that was ok and now is not (oom, mismatch,
crash...) is a regression too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from linbench.report.fit import POWER, fit_power_law
from linbench.report.load import Run
from linbench.report.series import ok_points, plain, scenarios
from linbench.results.schema import KEY_COLUMNS

# Points match on their axes; cuda:0 and cuda:1 match, so device is compared by type.
MATCH_COLUMNS = tuple(c if c != "device" else "device_type" for c in KEY_COLUMNS)
# Identical CPU runs differ by up to ~0.7 MiB of peak RSS at small sizes (measured).
CPU_MEMORY_FLOOR_BYTES = 1 << 20


class CompareError(ValueError):
    """The two runs cannot be compared (no common points, different devices...)."""


@dataclass(frozen=True)
class Thresholds:
    max_slowdown: float = 0.05
    max_memory_growth: float = 0.02
    memory_floor_bytes: int | None = None  # None: CPU_MEMORY_FLOOR_BYTES on CPU, 0 on GPUs
    max_exponents: dict[str, float] = field(default_factory=dict)  # "cosine" or "cosine:chunked"

    def floor_for(self, device_type: str) -> int:
        if self.memory_floor_bytes is not None:
            return self.memory_floor_bytes
        return CPU_MEMORY_FLOOR_BYTES if device_type == "cpu" else 0


@dataclass(frozen=True)
class PointDiff:
    key: dict[str, Any]
    base_status: str
    status: str
    base_ms: float | None
    ms: float | None
    ratio: float | None
    noise: float | None
    time_verdict: str  # faster, same, slower, regression, broken, fixed, not compared
    base_bytes: float | None
    bytes: float | None
    memory_growth: float | None
    memory_verdict: str  # same, smaller, larger, regression, -

    @property
    def regressed(self) -> bool:
        return self.time_verdict in ("regression", "broken") or self.memory_verdict == "regression"


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

    @property
    def regressions(self) -> list[PointDiff]:
        return [p for p in self.points if p.regressed]

    @property
    def failed(self) -> bool:
        return bool(self.regressions) or any(check.regressed for check in self.exponents)

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "current": self.current,
            "verdict": "regression" if self.failed else "pass",
            "points": [{**p.key, **{k: v for k, v in asdict(p).items() if k != "key"}} for p in self.points],
            "baseline_only": self.baseline_only,
            "current_only": self.current_only,
            "exponents": [{**asdict(c), "regressed": c.regressed} for c in self.exponents],
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


def _keyed(results: pd.DataFrame) -> pd.DataFrame:
    frame = results.copy()
    frame["device_type"] = frame["device"].astype(str).str.split(":").str[0]
    frame["causal"] = frame["causal"].astype(bool)
    return frame.drop_duplicates(list(MATCH_COLUMNS), keep="last").set_index(list(MATCH_COLUMNS))


def compare_runs(baseline: Run, current: Run, thresholds: Thresholds) -> Comparison:
    base, cur = _keyed(baseline.results), _keyed(current.results)
    common = base.index.intersection(cur.index, sort=False)
    if common.empty:
        raise CompareError(f"{baseline.path} and {current.path} have no point in common (same variant, impl, shape...)")
    points = [
        _diff(dict(zip(MATCH_COLUMNS, key, strict=True)), base.loc[key], cur.loc[key], thresholds) for key in common
    ]
    return Comparison(
        baseline=str(baseline.path),
        current=str(current.path),
        points=points,
        baseline_only=_keys(base.index.difference(cur.index, sort=False)),
        current_only=_keys(cur.index.difference(base.index, sort=False)),
        exponents=check_exponents(current, thresholds.max_exponents),
    )


def _keys(index: pd.Index) -> list[dict[str, Any]]:
    return [{c: plain(v) for c, v in zip(MATCH_COLUMNS, key, strict=True)} for key in index]


def _number(value: Any) -> float | None:
    return None if pd.isna(value) else float(value)


def _diff(key: dict[str, Any], base: pd.Series, cur: pd.Series, thresholds: Thresholds) -> PointDiff:
    key = {c: plain(v) for c, v in key.items()}
    both_ok = base["status"] == "ok" and cur["status"] == "ok"
    base_ms, ms = _number(base["time_ms"]), _number(cur["time_ms"])
    ratio = ms / base_ms if both_ok and base_ms and ms else None
    noise = _noise(base, cur) if ratio is not None else None
    base_bytes, cur_bytes = _number(base["peak_bytes"]), _number(cur["peak_bytes"])
    growth = (cur_bytes - base_bytes) / base_bytes if both_ok and base_bytes and cur_bytes is not None else None
    return PointDiff(
        key=key,
        base_status=str(base["status"]),
        status=str(cur["status"]),
        base_ms=base_ms,
        ms=ms,
        ratio=ratio,
        noise=noise,
        time_verdict=_time_verdict(base, cur, ratio, thresholds.max_slowdown),
        base_bytes=base_bytes,
        bytes=cur_bytes,
        memory_growth=growth,
        memory_verdict=_memory_verdict(base_bytes, cur_bytes, growth, thresholds, key["device_type"]),
    )


def _interval(row: pd.Series) -> tuple[float, float]:
    """The p20–p80 interval of a point's repetitions (its median twice when they are absent)."""
    low, high = _number(row["time_ms_p20"]), _number(row["time_ms_p80"])
    median = float(row["time_ms"])
    return (low if low is not None else median, high if high is not None else median)


def _noise(base: pd.Series, cur: pd.Series) -> float:
    """Half the p20–p80 spread of each run, relative to its median, added: the gap two
    medians need before their intervals stop overlapping."""
    spread = 0.0
    for row in (base, cur):
        low, high = _interval(row)
        spread += (high - low) / (2 * float(row["time_ms"]))
    return spread


def _time_verdict(base: pd.Series, cur: pd.Series, ratio: float | None, max_slowdown: float) -> str:
    if base["status"] == "ok" and cur["status"] != "ok":
        return "broken"
    if ratio is None:
        return "fixed" if cur["status"] == "ok" else "not compared"
    (base_low, base_high), (low, high) = _interval(base), _interval(cur)
    if low > base_high:
        return "regression" if ratio - 1 > max_slowdown else "slower"
    if high < base_low:
        return "faster"
    return "same"


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
