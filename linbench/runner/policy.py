"""Which points not to run: those an earlier failure or the clock already decided.

* A point at least as large as one of its series that ran out of memory or timed out is
  ``skipped`` (naming that point) rather than retried: it would fail the same way, slower.
* A point whose time, extrapolated from the same series' smaller lengths, would pass the
  time limit is ``skipped`` with the predicted time, rather than waited out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from linbench.runner.task import TimingPolicy
from linbench.sweep.points import Point
from linbench.sweep.spec import DECODE_MODE

# With one measured length, assume time grows as seq² (the slower of the two families).
DEFAULT_EXPONENT = 2.0
# ... but a decode step as the context: a KV cache step is linear in it, a recurrent one
# constant. The naive recompute's quadratic step shows its exponent from its second context on.
DECODE_DEFAULT_EXPONENT = 1.0
# Per-call fraction a bwd point adds for its untimed forward.
BWD_FORWARD_SHARE = 0.5


class SkipPolicy:
    """Remembers each series' outcomes and says when a point should not run."""

    def __init__(self, timeout_s: float, timing: TimingPolicy) -> None:
        self.timeout_s = timeout_s
        self.timing = timing
        self._failures: dict[tuple[Any, ...], list[tuple[Point, str]]] = defaultdict(list)
        self._times: dict[tuple[Any, ...], dict[int, float]] = defaultdict(dict)

    def record(self, point: Point, row: Mapping[str, Any]) -> None:
        status = row.get("status")
        if status in ("oom", "timeout"):
            self._failures[point.series].append((point, str(status)))
        elif status == "ok" and row.get("time_ms"):
            self._times[_curve(point)][point.shape.seq] = float(row["time_ms"]) / 1000.0

    def skip_reason(self, point: Point) -> str | None:
        for failed, status in self._failures[point.series]:
            if point.shape.dominates(failed.shape):
                what = "ran out of memory" if status == "oom" else "timed out"
                return f"{what} at the smaller or equal point {failed.shape.label}"
        predicted = self.predicted_call_s(point)
        if predicted is None:
            return None
        # Worker start-up is not counted: the supervisor allows a grace period for it.
        wall = self.timing.predicted_s(predicted)
        if point.mode == "bwd":
            wall *= 1 + BWD_FORWARD_SHARE
        if wall > self.timeout_s:
            per, lengths = ("token", "contexts") if point.mode == DECODE_MODE else ("call", "lengths")
            return (
                f"predicted {wall:.0f} s for the point ({predicted:.2f} s per {per}, extrapolated from "
                f"shorter {lengths}) exceeds --timeout-s {self.timeout_s:g}"
            )
        return None

    def predicted_call_s(self, point: Point) -> float | None:
        """Seconds per call at ``point``, from the two longest measured shorter lengths."""
        known = sorted((s, t) for s, t in self._times[_curve(point)].items() if s < point.shape.seq)
        if not known:
            return None
        seq, time_s = known[-1]
        default = DECODE_DEFAULT_EXPONENT if point.mode == DECODE_MODE else DEFAULT_EXPONENT
        if len(known) >= 2:
            (s0, t0), (s1, t1) = known[-2], known[-1]
            # Never extrapolate with less than linear growth: short lengths are overhead-bound.
            exponent = max(1.0, min(3.0, math.log(t1 / t0) / math.log(s1 / s0))) if t0 > 0 else default
        else:
            exponent = default
        return time_s * (point.shape.seq / seq) ** exponent


def _curve(point: Point) -> tuple[Any, ...]:
    """The series and every size but the length: the points one time-against-length curve joins."""
    return (*point.series, replace(point.shape, seq=0))
