"""Did the machine change, rather than the code? The drift check of ``linbench compare``.

A baseline committed weeks ago was measured on another day, perhaps another driver or host:
shifts the spread inside either run cannot see. Control points (impls named with ``--control``
or a suite's ``controls``, chosen because the code under test does not touch them) answer it:
when every judged control moved the same way and their median moved past ``max_slowdown``,
whichever one of them is left out, the environment changed, and the time verdicts of the
comparison say more about the machine than about the code.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from linbench.gate.rule import UNJUDGED  # a control whose own time cannot be judged says nothing about drift

if TYPE_CHECKING:
    from linbench.gate.point_diff import PointDiff


class ControlError(ValueError):
    """A control that is not VARIANT:IMPL, or one no compared point belongs to."""


@dataclass(frozen=True)
class ControlPoint:
    key: dict[str, Any]
    ratio: float


@dataclass(frozen=True)
class DriftCheck:
    controls: tuple[str, ...]
    points: tuple[ControlPoint, ...]  # the judged control points (ok on both sides)
    median_ratio: float | None  # e^(median log ratio) of those points
    changed: bool
    max_slowdown: float

    @property
    def moved(self) -> tuple[ControlPoint, ...]:
        """The control points that moved past max_slowdown, either way."""
        bound = math.log1p(self.max_slowdown)
        return tuple(p for p in self.points if abs(math.log(p.ratio)) > bound)

    def to_json(self) -> dict[str, Any]:
        return {
            "controls": list(self.controls),
            "changed": self.changed,
            "median_ratio": self.median_ratio,
            "points": [{**p.key, "ratio": p.ratio} for p in self.points],
            "moved": [{**p.key, "ratio": p.ratio} for p in self.moved],
        }


def check_drift(
    points: Sequence[PointDiff], controls: Sequence[str], max_slowdown: float, required: Sequence[str] = ()
) -> DriftCheck:
    """The drift of ``controls`` among ``points``; ControlError for a malformed control, or for one
    of ``required`` (those given on the command line) that no compared point belongs to."""
    names = tuple(dict.fromkeys(_checked(c) for c in controls))
    chosen = [p for p in points if f"{p.key['variant']}:{p.key['impl']}" in names]
    for name in (_checked(r) for r in required):
        if not any(f"{p.key['variant']}:{p.key['impl']}" == name for p in chosen):
            raise ControlError(f"--control {name}: no point of it is in both runs")
    judged = tuple(
        ControlPoint(p.key, p.ratio) for p in chosen if p.ratio is not None and p.time_verdict not in UNJUDGED
    )
    if not judged:
        return DriftCheck(names, (), None, False, max_slowdown)
    logs = [math.log(p.ratio) for p in judged]
    centre = statistics.median(logs)
    same_side = all(x > 0 for x in logs) or all(x < 0 for x in logs)
    floor = math.log1p(max_slowdown)
    # No one control decides: the others' median moved past the floor too, whichever is left
    # out (one control that regressed on its own is that impl's change, not the machine's;
    # with two controls the median is their mean, which one of them alone could carry).
    others = [logs[:i] + logs[i + 1 :] for i in range(len(logs))] if len(logs) > 1 else []
    changed = same_side and abs(centre) > floor and all(abs(statistics.median(rest)) > floor for rest in others)
    return DriftCheck(names, judged, math.exp(centre), changed, max_slowdown)


def check_control_names(names: list[str]) -> None:
    """ControlError for a control that is not VARIANT:IMPL (``ab`` asks before any round runs)."""
    for name in names:
        _checked(name)


def _checked(name: str) -> str:
    variant, sep, impl = name.strip().partition(":")
    if not sep or not variant or not impl:
        raise ControlError(f"control {name!r} must be VARIANT:IMPL (for example softmax:sdpa)")
    return f"{variant}:{impl}"
