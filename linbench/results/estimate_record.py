"""meta.json's ``estimate``: how long a run was estimated to take, and how long it took.

The estimate (linbench/sweep/estimate.py's model, with the first-use kernel build where this
command made it) is written when the run starts; the wall time the command took, from
planning to its last row, and their ratio when it ends. A resumed run's record is its last
session's. ``section`` writes it, ``read`` reads it back, so the estimator can be checked
against every recorded run (tests/runner/test_estimate_record.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

SECTION = "estimate"


@dataclass(frozen=True)
class EstimateRecord:
    estimate_s: float  # the whole estimate: the points, and the kernel build when counted
    build_estimate_s: float  # of which the first-use kernel build (0: the build cache had it)
    points: int  # the points the session ran
    resumed: bool = False
    build_s: float | None = None  # planning with the kernel build, as measured (None: no build)
    actual_s: float | None = None  # the command's wall time, planning included (None: running)
    status: str | None = None  # how the run ended: complete, interrupted, failed

    @property
    def ratio(self) -> float | None:
        """What the run took over what it was estimated to take (2.0: twice as long)."""
        if self.actual_s is None or self.estimate_s <= 0:
            return None
        return self.actual_s / self.estimate_s

    def ended(self, actual_s: float, status: str) -> EstimateRecord:
        return replace(self, actual_s=actual_s, status=status)

    def section(self) -> dict[str, Any]:
        """The section as meta.json holds it (seconds to the tenth, the ratio to 0.01)."""
        rounded = replace(
            self,
            estimate_s=round(self.estimate_s, 1),
            build_estimate_s=round(self.build_estimate_s, 1),
            build_s=_tenth(self.build_s),
            actual_s=_tenth(self.actual_s),
        )
        ratio = rounded.ratio  # of the seconds as written, so that a reader gets it again from them
        return asdict(rounded) | {"ratio": None if ratio is None else round(ratio, 2)}

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> EstimateRecord | None:
        """The record ``meta`` holds; None for a run from before it, or one that cannot be read."""
        section = meta.get(SECTION)
        if not isinstance(section, Mapping):
            return None
        try:
            return cls(
                estimate_s=float(section["estimate_s"]),
                build_estimate_s=float(section.get("build_estimate_s") or 0.0),
                points=int(section.get("points") or 0),
                resumed=bool(section.get("resumed", False)),
                build_s=_seconds(section.get("build_s")),
                actual_s=_seconds(section.get("actual_s")),
                status=section.get("status"),
            )
        except (KeyError, TypeError, ValueError):
            return None


def _tenth(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)
