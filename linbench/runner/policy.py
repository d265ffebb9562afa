"""Which points not to run: those an earlier failure or the clock already decided.

* A point at least as large as one of its series that ran out of memory or timed out is
  ``skipped`` (naming that point) rather than retried: it would fail the same way, slower.
* A point whose time, predicted from the same curve's shorter lengths, would pass the time
  limit even on the optimistic side of the prediction is ``skipped`` with the prediction.
* A point whose pessimistic prediction passes the limit (but whose optimistic one does not)
  runs *on probation*: the worker measures its first call and stops there, as a
  ``timeout``, when the calls the point still needs at that speed would pass the limit.

The prediction (``SkipPolicy.prediction``):

1. **Fit.** A least-squares line through (log length, log median time) of every measured
   shorter length of the curve. With four lengths or more, when the last three alone give an
   exponent that differs from the whole fit's by more than ``BEND_EXPONENT``, the curve bends
   (an overhead-bound start, a cache that stops fitting) and the last three are fitted
   instead. The exponent is clamped to [1, 3]: never less than linear growth (short lengths
   are overhead-bound), never more than cubic. A clamped line runs through the longest
   measured point. With one measured length the exponent is assumed, as the kind of point
   says (runner/kinds.py): 2 for ``run`` (the slower of the two families), 1 for a decode
   step (a KV cache's step is linear in the context).
2. **Uncertainty** u, in log time: ``BASE_MARGIN`` (the machine drifts between points) plus
   the larger of the measured noise, the median over the fitted points of log(p80 / p20),
   and the misfit, the largest distance of a fitted point from the line. An error of u at
   both ends of the fitted range tilts the line, so u grows with how far the prediction
   reaches past the range: u · (1 + 2 · log(s / s_last) / log(s_last / s_first)). With one
   measured length, the low and high predictions take the kind's exponents 1 and 3 (decode:
   0 and 2) and u = BASE_MARGIN + that point's noise.
3. **Bounds.** Optimistic = central · exp(−u), pessimistic = central · exp(+u), each turned
   into the point's wall time by the timing policy (warm-up and repetitions).

A fixed-token-budget run (``run --tokens``) holds batch · seq fixed, so one curve is the
points of one budget, and every exponent above is one less (the work per token, not per
sequence, grows as s^(b−1)): clamped to [0, 2], assumed 1 from a single length. A point
stands for another there when it is at least as long at the same or a larger budget.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from linbench.measure.timing_policy import TimingPolicy
from linbench.runner.kind_protocol import Kind
from linbench.runner.run_kind import RUN
from linbench.sweep.points import Point

MIN_EXPONENT, MAX_EXPONENT = 1.0, 3.0
# The last three lengths replace the whole curve when their exponent differs by more.
BEND_EXPONENT = 0.3
TAIL_POINTS = 3
# Margin in log time on top of the measured noise: 20% either way.
BASE_MARGIN = math.log(1.2)
# Per-call fraction a bwd point adds for its untimed forward.
BWD_FORWARD_SHARE = 0.5


@dataclass(frozen=True)
class Prediction:
    """Seconds per call at a length: the fit's value and its optimistic and pessimistic bounds."""

    call_s: float
    low_s: float
    high_s: float
    exponent: float
    points: int  # measured lengths the fit went through


@dataclass(frozen=True)
class _Measured:
    seq: int
    median_s: float
    noise: float  # log(p80 / p20); 0 when the row has no percentiles


class SkipPolicy:
    """Remembers each series' outcomes and says when a point should not run, or should run
    on probation."""

    def __init__(self, timeout_s: float, timing: TimingPolicy, fixed_tokens: bool = False, kind: Kind = RUN) -> None:
        self.timeout_s = timeout_s
        self.timing = timing
        self.fixed_tokens = fixed_tokens
        self.kind = kind  # its guesses from a single length, and its words
        self._failures: dict[tuple[Any, ...], list[tuple[Point, str]]] = defaultdict(list)
        self._times: dict[tuple[Any, ...], dict[int, _Measured]] = defaultdict(dict)

    def record(self, point: Point, row: Mapping[str, Any]) -> None:
        status = row.get("status")
        if status in ("oom", "timeout"):
            self._failures[point.series].append((point, str(status)))
        elif status == "ok" and row.get("time_ms"):
            median = float(row["time_ms"]) / 1000.0
            self._times[self._curve(point)][point.shape.seq] = _Measured(point.shape.seq, median, _noise(row))

    def skip_reason(self, point: Point) -> str | None:
        for failed, status in self._failures[point.series]:
            if self._dominates(point, failed):
                what = "ran out of memory" if status == "oom" else "timed out"
                return f"{what} at the smaller or equal point {failed.shape.label}"
        prediction = self.prediction(point)
        if prediction is None:
            return None
        # Worker start-up is not counted: the supervisor allows a grace period for it.
        least = self.wall_s(point, prediction.low_s)
        if least > self.timeout_s:
            per, lengths = self.kind.words.per, self.kind.words.lengths
            return (
                f"predicted at least {least:.0f} s for the point ({_span(prediction)} s per {per}, "
                f"s^{prediction.exponent:.2f} fitted to {prediction.points} shorter {lengths}) "
                f"exceeds --timeout-s {self.timeout_s:g}"
            )
        return None

    def probation(self, point: Point) -> str | None:
        """Why ``point`` should stop after its first call if that call says it cannot finish
        in time (its pessimistic prediction passes the limit); None to run it in full."""
        prediction = self.prediction(point)
        if prediction is None:
            return None
        most = self.wall_s(point, prediction.high_s)
        if most <= self.timeout_s:
            return None
        per = self.kind.words.per
        return f"predicted up to {most:.0f} s ({_span(prediction)} s per {per}), past --timeout-s {self.timeout_s:g}"

    def wall_s(self, point: Point, call_s: float) -> float:
        """Wall time of ``point`` when one call takes ``call_s``."""
        wall = self.timing.predicted_s(call_s)
        return wall * (1 + BWD_FORWARD_SHARE) if point.mode == "bwd" else wall

    def predicted_call_s(self, point: Point) -> float | None:
        """Seconds per call at ``point``: the fit's central value (None with nothing measured)."""
        prediction = self.prediction(point)
        return None if prediction is None else prediction.call_s

    def prediction(self, point: Point) -> Prediction | None:
        """Seconds per call at ``point`` from the curve's shorter measured lengths (module doc)."""
        seq = point.shape.seq
        known = sorted((m for s, m in self._times[self._curve(point)].items() if s < seq), key=lambda m: m.seq)
        if not known:
            return None
        offset = 1.0 if self.fixed_tokens else 0.0
        if len(known) == 1:
            return _single(known[0], seq, self.kind, offset)
        return _fitted(known, seq, offset)

    def _curve(self, point: Point) -> tuple[Any, ...]:
        """The points one time-against-length curve joins: the series and every size but the
        length (with a fixed token budget, the budget in place of the batch)."""
        if self.fixed_tokens:
            shape = point.shape
            return (*point.series, shape.heads, shape.dim_k, shape.dim_v, shape.batch * shape.seq)
        return (*point.series, replace(point.shape, seq=0))

    def _dominates(self, point: Point, failed: Point) -> bool:
        """``point`` costs at least what ``failed`` did."""
        if not self.fixed_tokens:
            return point.shape.dominates(failed.shape)
        a, b = point.shape, failed.shape
        longer = a.seq >= b.seq and a.heads >= b.heads and a.dim_k >= b.dim_k and a.dim_v >= b.dim_v
        return longer and a.batch * a.seq >= b.batch * b.seq


def _single(only: _Measured, seq: int, kind: Kind, offset: float) -> Prediction:
    """The prediction from one measured length: the kind's assumed exponent, and its range."""
    exponent = kind.default_exponent - offset
    low, high = (x - offset for x in kind.single_point_range)
    ratio = seq / only.seq
    u = BASE_MARGIN + only.noise
    return Prediction(
        call_s=only.median_s * ratio**exponent,
        low_s=only.median_s * ratio**low * math.exp(-u),
        high_s=only.median_s * ratio**high * math.exp(u),
        exponent=exponent,
        points=1,
    )


def _fitted(known: Sequence[_Measured], seq: int, offset: float) -> Prediction:
    points = list(known)
    exponent, intercept = _least_squares(points)
    if len(points) > TAIL_POINTS:
        tail = points[-TAIL_POINTS:]
        tail_exponent, tail_intercept = _least_squares(tail)
        if abs(tail_exponent - exponent) > BEND_EXPONENT:
            points, exponent, intercept = tail, tail_exponent, tail_intercept
    last = points[-1]
    least, most = MIN_EXPONENT - offset, MAX_EXPONENT - offset
    if not least <= exponent <= most:
        exponent = min(most, max(least, exponent))
        intercept = math.log(last.median_s) - exponent * math.log(last.seq)
    misfit = max(abs(math.log(m.median_s) - intercept - exponent * math.log(m.seq)) for m in points)
    noise = statistics.median(m.noise for m in points)
    span = max(math.log(last.seq / points[0].seq), math.log(2.0))
    reach = max(math.log(seq / last.seq), 0.0)
    u = (BASE_MARGIN + max(noise, misfit)) * (1 + 2 * reach / span)
    central = math.exp(intercept + exponent * math.log(seq))
    return Prediction(central, central * math.exp(-u), central * math.exp(u), exponent, len(points))


def _least_squares(points: Sequence[_Measured]) -> tuple[float, float]:
    """Slope and intercept of log time against log length."""
    xs = [math.log(m.seq) for m in points]
    ys = [math.log(m.median_s) for m in points]
    x_mean, y_mean = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - x_mean) ** 2 for x in xs)
    slope = sum((x - x_mean) * (y - y_mean) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, y_mean - slope * x_mean


def _noise(row: Mapping[str, Any]) -> float:
    try:
        low, high = float(row["time_ms_p20"]), float(row["time_ms_p80"])
    except (KeyError, TypeError, ValueError):
        return 0.0
    return math.log(high / low) if low > 0 and high >= low else 0.0


def _span(prediction: Prediction) -> str:
    return f"{prediction.low_s:.2f}–{prediction.high_s:.2f}"
