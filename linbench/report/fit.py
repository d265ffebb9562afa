"""Scaling exponents and crossover lengths from measured points.

A cost that grows as c·x^p is a straight line of slope p on log-log axes. Small sizes sit
above that line, where fixed costs (launches, Python, thread wake-ups) dominate: on a GPU a
kernel's time can stay flat over a whole decade of lengths before it starts to grow. A line
through every point then describes neither part (cosine:kernel on an H100 at B1 H8: s^0.28,
R² 0.66). So the fit looks for where the power law starts, and says so when it finds none.

The rule, on the points sorted by x (positive, finite; one per x):

1. **Power law.** The longest *tail* (the points from some length up to the longest one) of at
   least ``MIN_FIT_POINTS`` points such that

   a. the least-squares line through (log x, log y) has R² ≥ ``MIN_R2``;
   b. it grows: by ``MIN_RISE``× at least from its shortest length to its longest (a line that
      rises less shows no growth to speak of; step 2 calls such data flat);
   c. its first step is not markedly flatter than the rest of it (slope ≥ ``OVERHEAD_SLOPE_SHARE``
      × the slope of the tail without its first point; tails of four points or more), so the
      knee where the overhead gives way is not inside the fit;
   d. where points are left out before it, the law rises clear of them: its value at the longest
      length is at least ``MIN_RISE`` × every value left out. An overhead-bound prefix lies flat
      below the law's rise; a chance upturn at the end of noisy, flat data does not get that high.

   Three points line up with R² ≥ 0.98 by chance in ~9% of draws; with b and d, flat data
   scattered by up to 10% never shows a power law, scattered by 30% in ≤ 0.5% of series of 5 to 11
   points (in ~4% of series of only 3 points: three points are little evidence, and a law on
   fewer than ``FEW_POINTS`` is shown as "too few to trust").

   ``left_out`` says how many of the shortest points were left out as overhead-bound.
2. **Flat.** Otherwise, with ``MIN_FIT_POINTS`` points or more, when the line through all of them
   changes by less than ``FLAT_CHANGE``× from the shortest length to the longest and the points
   scatter about it by less than that factor (root mean square, in log): no power law, and no
   growth the measurements can show. A recurrent decoder's state and time per token are flat;
   so is a kernel's time while launch overhead dominates. The exponent is that line's slope,
   near 0; its R² says nothing.
3. **Two points.** Two points give a slope and nothing to judge it by; it is marked as such.
4. **None.** Otherwise no power law was found. ``exponent`` and ``r2`` are then those of one line
   through every point, for diagnosis only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MIN_FIT_POINTS = 3
# A power law on fewer points is shown with a warning: three points line up by chance too often.
FEW_POINTS = 4
MIN_R2 = 0.98
# Data that changes less than this factor over its range, give or take as much scatter, is flat.
FLAT_CHANGE = 2.0
# A tail whose first step is flatter than this share of the rest's slope holds the overhead's knee.
OVERHEAD_SLOPE_SHARE = 0.9
# The law must end at least this many times above every point it left out.
MIN_RISE = 1.5

POWER = "power"
FLAT = "flat"
TWO_POINTS = "two_points"
NONE = "none"


@dataclass(frozen=True)
class Fit:
    """What ``fit_power_law`` found: ``law`` is "power" (y ∝ x^exponent over [x_min, x_max]),
    "flat", "two_points" or "none" (see the module's rule). ``r2`` is that of the log-log line
    whose slope is ``exponent``; ``left_out`` the shortest points before the power law."""

    law: str
    exponent: float
    r2: float
    points: int
    x_min: float
    x_max: float
    left_out: int = 0

    @property
    def is_law(self) -> bool:
        """True when the exponent describes the data: a power law, or flat."""
        return self.law in (POWER, FLAT)


@dataclass(frozen=True)
class _Line:
    """The least-squares line through (log x, log y) points."""

    slope: float
    r2: float
    end: float  # its log y at the largest x
    rms: float  # root mean square of the residuals, in log y

    @classmethod
    def through(cls, logs: list[tuple[float, float]]) -> _Line:
        n = len(logs)
        mx, my = sum(x for x, _ in logs) / n, sum(y for _, y in logs) / n
        sxx = sum((x - mx) ** 2 for x, _ in logs)
        sxy = sum((x - mx) * (y - my) for x, y in logs)
        syy = sum((y - my) ** 2 for _, y in logs)
        slope = sxy / sxx
        r2 = 1.0 if syy == 0 else (sxy * sxy) / (sxx * syy)
        rms = math.sqrt(max(0.0, syy - slope * sxy) / n)
        return cls(slope, r2, my + slope * (logs[-1][0] - mx), rms)


def _power_tail(logs: list[tuple[float, float]], start: int, min_points: int) -> _Line | None:
    """The line through ``logs[start:]`` when it passes the module's tests a–d, else None."""
    tail = logs[start:]
    line = _Line.through(tail)
    if line.r2 < MIN_R2 or line.slope * (tail[-1][0] - tail[0][0]) < math.log(MIN_RISE):
        return None
    if len(tail) > min_points:
        (x0, y0), (x1, y1) = tail[0], tail[1]
        if (y1 - y0) / (x1 - x0) < OVERHEAD_SLOPE_SHARE * _Line.through(tail[1:]).slope:
            return None
    if start and line.end < math.log(MIN_RISE) + max(y for _, y in logs[:start]):
        return None
    return line


def _is_flat(logs: list[tuple[float, float]], line: _Line) -> bool:
    change = abs(line.slope) * (logs[-1][0] - logs[0][0])
    return change < math.log(FLAT_CHANGE) and line.rms < math.log(FLAT_CHANGE)


def fit_power_law(points: Iterable[tuple[float, float]], min_points: int = MIN_FIT_POINTS) -> Fit | None:
    """Where ``(x, y)`` follows a power law, by the module's rule; None with fewer than two
    usable points (positive, finite x and y at distinct x)."""
    by_x: dict[float, float] = {}
    for x, y in points:
        if x > 0 and y > 0 and math.isfinite(x) and math.isfinite(y):
            by_x[float(x)] = float(y)
    pairs = sorted(by_x.items())
    if len(pairs) < 2:
        return None
    logs = [(math.log(x), math.log(y)) for x, y in pairs]
    x_max = pairs[-1][0]
    for start in range(len(logs) - min_points + 1):
        tail = _power_tail(logs, start, min_points)
        if tail is not None:
            return Fit(POWER, tail.slope, tail.r2, len(logs) - start, pairs[start][0], x_max, left_out=start)
    line = _Line.through(logs)
    law = FLAT if len(logs) >= min_points and _is_flat(logs, line) else NONE
    if len(logs) == 2:
        law = TWO_POINTS
    return Fit(law, line.slope, line.r2, len(logs), pairs[0][0], x_max)


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


def quality_text(law: str, r2: float, points: int, busy: bool = False) -> str:
    """What backs an exponent, to print beside it: ``R² 0.998, 5 points`` for a power law
    (``R² 0.996, 3 points: too few to trust`` under ``FEW_POINTS``), ``2 points only``, and the
    point count alone where R² says nothing (flat data, no law); ``busy`` (times measured on a
    busy machine) adds ``; busy machine``."""
    if law == TWO_POINTS:
        text = "2 points only"
    elif law == POWER:
        text = f"R² {r2:.3f}, {points} points" + (": too few to trust" if points < FEW_POINTS else "")
    else:
        text = f"{points} points"
    return text + ("; busy machine" if busy else "")
