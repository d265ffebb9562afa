"""Scaling exponents and crossover lengths from measured points.

A cost that grows as c·x^p is a straight line of slope p on log-log axes. Small sizes sit
above that line, where fixed costs (launches, Python, thread wake-ups) dominate, so the fit
drops leading points while they are markedly flatter than the rest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# A leading segment flatter than this share of the rest's slope is overhead-bound.
OVERHEAD_SLOPE_SHARE = 0.9
MIN_FIT_POINTS = 3


@dataclass(frozen=True)
class Fit:
    """y ∝ x^exponent over [x_min, x_max], from ``points`` points, with R² of the log-log line."""

    exponent: float
    r2: float
    points: int
    x_min: float
    x_max: float


def _least_squares(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Slope and R² of the least-squares line through (xs, ys)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    syy = sum((y - my) ** 2 for y in ys)
    slope = sxy / sxx
    r2 = 1.0 if syy == 0 else (sxy * sxy) / (sxx * syy)
    return slope, r2


def fit_power_law(points: Iterable[tuple[float, float]], min_points: int = MIN_FIT_POINTS) -> Fit | None:
    """The power law through ``(x, y)`` points past the small-size overhead; None with fewer
    than two usable points (positive x and y at distinct x)."""
    by_x: dict[float, float] = {}
    for x, y in points:
        if x > 0 and y > 0 and math.isfinite(x) and math.isfinite(y):
            by_x[float(x)] = float(y)
    pairs = sorted(by_x.items())
    if len(pairs) < 2:
        return None
    logs = [(math.log(x), math.log(y)) for x, y in pairs]
    start = 0
    while len(logs) - start > min_points:
        (x0, y0), (x1, y1) = logs[start], logs[start + 1]
        rest, _ = _least_squares([x for x, _ in logs[start + 1 :]], [y for _, y in logs[start + 1 :]])
        if rest <= 0 or (y1 - y0) / (x1 - x0) >= OVERHEAD_SLOPE_SHARE * rest:
            break
        start += 1
    kept = logs[start:]
    slope, r2 = _least_squares([x for x, _ in kept], [y for _, y in kept])
    return Fit(slope, r2, len(kept), pairs[start][0], pairs[-1][0])


def crossover(candidate: Mapping[int, float], baseline: Mapping[int, float]) -> int | None:
    """The shortest length from which ``candidate`` is faster than ``baseline`` at every
    longer length both reached; None when it is not faster at the longest one.

    Requiring it to stay faster keeps one noisy short point from being called the crossover.
    """
    common = sorted(set(candidate) & set(baseline))
    found: int | None = None
    for length in reversed(common):
        if candidate[length] < baseline[length]:
            found = length
        else:
            break
    return found
