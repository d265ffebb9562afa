"""Two runs measured apart differ by more than their processes show: the between-run term.

Each run's processes are interleaved with each other, not with the other run's, so a state of
the machine that lasts minutes (a neighbour's load, clocks, memory placement) moves one whole
run. The spread between a run's processes cannot see it. On a busy 2-core CPU, back-to-back
runs of unchanged code moved as a whole by 3-75% (the median over their points), and each
point's move was 2.5 to 5.5 times (root mean square) the standard error its processes predicted
(docs/gate.md, "Between runs"). Two runs of one ``linbench ab`` job share the machine round by
round (ABBA), so this term is for separately measured runs only.

The comparison's own points measure it. The *shift* c is the median log ratio of the control
points (``--control``, a suite's ``controls``) where there are any, else of every point with a
time on both sides: what the whole run moved. A point among those is judged against the median
of the others (leave one out): with two control points the median is their mean, and a control
that regressed on its own would otherwise take half its change out of itself (a planted +30% on
one of two softmax:sdpa points was judged against a shift of +16%). Each point is judged on its
ratio after taking c out, against its own standard error and the *scatter* τ of the points
around their median beyond what their processes explain (τ² = s² − median SE², s = 1.4826·MAD),
measured on the controls where there are MIN_POINTS of them (a change moves the points it
touches, which would pass for scatter), else on every point. A shift past ``max_slowdown`` of
every point, with no control to say it was the machine, is the machine or a change to every
impl: the comparison cannot tell which, and is inconclusive (gate/verdict.py). With fewer than
MIN_POINTS points there is nothing to measure it with, and the runs are judged as though no
such term existed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from linbench.results.processes import MAD_TO_SIGMA, median_difference_se

if TYPE_CHECKING:
    from linbench.gate.point_diff import PointDiff

MIN_POINTS = 5
CONTROLS, EVERY_POINT = "controls", "every point"


@dataclass(frozen=True)
class BetweenRuns:
    shift: float  # c: what the whole run moved, in log
    scatter: float  # τ: the points' scatter around it beyond their own standard errors, in log
    points: int  # the points it was measured on
    source: str  # where the shift was measured: CONTROLS or EVERY_POINT
    # Each reference point's identity (point_id) and log ratio: what ``without`` leaves out.
    reference: tuple[tuple[tuple[str, ...], float], ...] = ()

    def without(self, key: Mapping[str, Any]) -> BetweenRuns:
        """The term a point (``key``) is judged against: the shift without its own ratio where
        it is one of the reference points and others remain."""
        point = point_id(key)
        others = [log for ident, log in self.reference if ident != point]
        if len(others) == len(self.reference) or not others:
            return self
        return replace(self, shift=float(np.median(others)))

    def moved(self, max_slowdown: float) -> bool:
        """Whether the whole run moved past the effect-size floor."""
        return abs(self.shift) > math.log1p(max_slowdown)

    def unexplained(self, max_slowdown: float) -> bool:
        """Every point moved past the floor and no control says it was the machine."""
        return self.source == EVERY_POINT and self.moved(max_slowdown)

    def to_json(self) -> dict[str, object]:
        return {
            "shift": math.expm1(self.shift),
            "scatter": self.scatter,
            "points": self.points,
            "source": self.source,
        }


def between_runs(points: Sequence[PointDiff], controls: Sequence[str]) -> BetweenRuns | None:
    """The between-run term of ``points`` (judged once without it); None with too few points."""
    measured = [(p, p.ratio) for p in points if p.ratio is not None and p.ratio > 0]
    if len(measured) < MIN_POINTS:
        return None
    names = set(controls)
    chosen = [(p, r) for p, r in measured if f"{p.key['variant']}:{p.key['impl']}" in names]
    reference = chosen or measured
    logs = tuple((point_id(p.key), math.log(r)) for p, r in reference)
    shift = float(np.median([log for _, log in logs]))
    # The scatter from the controls where they are enough to measure it: they are untouched
    # by the change, while every point includes whatever the change moved.
    scattered = reference if len(reference) >= MIN_POINTS else measured
    source = CONTROLS if chosen else EVERY_POINT
    return BetweenRuns(shift, _scatter(scattered), len(reference), source, logs)


def point_id(key: Mapping[str, Any]) -> tuple[str, ...]:
    """A compared point's identity: its key's values, in its key's order."""
    return tuple(f"{name}={value}" for name, value in key.items())


def _scatter(points: Sequence[tuple[PointDiff, float]]) -> float:
    """τ: how far the points' log ratios (point, ratio) scatter around their median
    (1.4826·MAD) beyond what their own standard errors explain."""
    logs = np.log([ratio for _, ratio in points])
    centre = float(np.median(logs))
    scatter = MAD_TO_SIGMA * float(np.median(np.abs(logs - centre)))
    known = [e * e for e in (_standard_error(p) for p, _ in points) if e is not None]
    within = float(np.median(known)) if known else 0.0
    return math.sqrt(max(0.0, scatter * scatter - within))


def _standard_error(point: PointDiff) -> float | None:
    """The standard error of a point's log ratio from its processes (rule.py); None where
    they were too few to give one."""
    if point.spread is None or not point.base_processes or not point.processes:
        return None
    return median_difference_se(point.spread, point.base_processes, point.processes)
