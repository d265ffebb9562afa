"""What a series' newest runs say, whatever Otava found: a series never passes while its recent
runs sit past the floor from the level before them.

The last ``recent`` runs (the window) are compared with the runs before them, back to the newest
standing change (detect.standing) or the segment's start. When the window's median sits past the
floor (``--min-magnitude``) from that level:

- it is a **regression** when the evidence says so: a one-sided two-sample t-test on the logs of the
  window's runs and the runs before gives a p-value at most the series' share of the suite-wide
  false-alarm level
  (``alpha``: ``--max-pvalue`` over the number of series), and the step has at least
  MIN_RUNS_AFTER runs (fewer when the window is shorter): a change needs runs after it to stand;
- otherwise it is **inconclusive**: the runs so far cannot tell a step from noise, and the next
  runs will. Never a pass.

Within the floor, the newest run alone is inconclusive only when it stands out from the runs
before it past what their own spread explains at a lax suite-wide level (LAX_LEVEL a night,
shared among the series): one slow night is not yet a change, and a night that is only as slow
as the noise makes nights is not news either.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from linbench.gate.sequential import t_quantile, t_tail
from linbench.history.detect import INTERVAL_RUNS, MIN_RUNS_AFTER, Change

PASS, REGRESSION, INCONCLUSIVE = "pass", "regression", "inconclusive"
# The share of flat nights a whole suite may call inconclusive for its newest run alone.
LAX_LEVEL = 0.05


@dataclass(frozen=True)
class Newest:
    """The verdict on a series' newest runs and what it rests on."""

    verdict: str  # PASS, REGRESSION or INCONCLUSIVE
    reason: str | None = None  # why inconclusive, in words
    step: int | None = None  # a regression's first slower run (its index in the segment)
    before: float | None = None  # the level before the window (median)
    after: float | None = None  # the window's median from the step on
    ratio: float | None = None
    pvalue: float | None = None
    runs_before: int = 0
    runs_after: int = 0
    start: int = 0  # the first of the runs before (their index in the segment)


def judge_newest(
    values: Sequence[float], changes: Sequence[Change], recent: int, floor: float, alpha: float, series: int = 1
) -> Newest:
    """The newest runs of ``values`` (one segment, in run order) against the level before them;
    ``changes``: the segment's standing changes; ``alpha``: a series' false-alarm level;
    ``series``: how many series share LAX_LEVEL."""
    n = len(values)
    window = min(recent, n - INTERVAL_RUNS)
    if window < 1:
        return Newest(PASS)
    start = max([c.index for c in changes if c.index <= n - window - INTERVAL_RUNS], default=0)
    before, recent_values = list(values[start : n - window]), list(values[n - window :])
    level = statistics.median(before)
    ratio = statistics.median(recent_values) / level
    if ratio - 1.0 <= floor:
        return _newest_alone(values, before, level, floor, series)
    step = _step(values, n - window, level, floor)
    after = list(values[step:])
    # The window as it stands, not the runs from the step on: a step chosen for its size would
    # make its own test look better than it is.
    pvalue = step_pvalue([math.log(v) for v in recent_values], [math.log(v) for v in before])
    found = Newest(
        REGRESSION, None, step, level, statistics.median(after), statistics.median(after) / level, pvalue,
        len(before), len(after), start,
    )  # fmt: skip
    if pvalue <= alpha and len(after) >= min(MIN_RUNS_AFTER, window):
        return found
    why = (
        f"the last {len(after)} run(s) sit {found.ratio:.3f}× above the {len(before)} before them, "
        f"not yet evidence of a change (p {pvalue:.1e}, a regression needs {alpha:.1e}"
        f"{'' if len(after) >= MIN_RUNS_AFTER else f' and {MIN_RUNS_AFTER} runs'}): the next runs say"
    )
    return replace(found, verdict=INCONCLUSIVE, reason=why)


def _step(values: Sequence[float], first: int, level: float, floor: float) -> int:
    """The first run of the window from which the runs are past the floor (each, and their
    median), where the step most likely began; else the window's first."""
    bar = level * (1.0 + floor)
    for index in range(first, len(values)):
        if values[index] > bar and statistics.median(values[index:]) > bar:
            return index
    return first


def _newest_alone(values: Sequence[float], before: list[float], level: float, floor: float, series: int) -> Newest:
    """Inconclusive when the newest run alone is past the floor and past the spread of the runs
    before it at LAX_LEVEL shared among ``series``; else a pass."""
    newest = math.log(values[-1] / level)
    logs = [math.log(v) for v in before]
    if newest <= math.log1p(floor) or len(logs) < 2:
        return Newest(PASS)
    spread = statistics.stdev(logs) * math.sqrt(1.0 + 1.0 / len(logs))
    bar = t_quantile(min(LAX_LEVEL / max(series, 1), 0.49), len(logs) - 1) * spread
    if newest <= bar:
        return Newest(PASS)
    ratio = math.exp(newest)
    why = (
        f"the newest run alone is {ratio:.3f}× the {len(before)} before it, past their spread: "
        "a change or a slow night, the next runs say"
    )
    return Newest(INCONCLUSIVE, why, len(values) - 1, level, values[-1], ratio, None, len(before), 1)


def step_pvalue(after: Sequence[float], before: Sequence[float]) -> float:
    """The one-sided p-value of Student's two-sample t-test (pooled variance) that ``after`` is
    larger than ``before``; 1 with fewer than three values in all or no spread. Pooled, not
    Welch's: a step moves a point's level, not its run-to-run noise, and three runs after a
    step leave Welch's test two degrees of freedom, too few to see even a step ten times the
    noise."""
    if len(after) < 1 or len(before) < 1 or len(after) + len(before) < 3:
        return 1.0
    df = len(after) + len(before) - 2
    squares = sum((x - statistics.mean(after)) ** 2 for x in after)
    squares += sum((x - statistics.mean(before)) ** 2 for x in before)
    se = math.sqrt(squares / df * (1.0 / len(after) + 1.0 / len(before)))
    difference = statistics.mean(after) - statistics.mean(before)
    if se == 0.0:
        return 0.0 if difference > 0 else 1.0
    tail = t_tail(abs(difference / se), df)
    return tail if difference > 0 else 1.0 - tail


def change_pvalue(values: Sequence[float], change: Change) -> float:
    """The evidence for a change Otava placed: the one-sided t-test p-value of its runs after
    against its runs before (in log; in its direction: slower or faster), times the places it
    could have been put. Otava picks the split that separates the runs most, so the t-test's
    p-value of that split alone, which Otava reports, is far smaller than noise warrants
    (simulated: 12 false regressions in 100 flat nightly suites at 20% noise); the factor is
    Bonferroni's for that choice."""
    before = [math.log(v) for v in values[change.index - change.runs_before : change.index]]
    after = [math.log(v) for v in values[change.index : change.index + change.runs_after]]
    one_sided = step_pvalue(after, before) if change.ratio >= 1.0 else step_pvalue(before, after)
    return min(1.0, one_sided * max(len(values) - 1, 1))
