"""What a history says: per series, its splits, its standing changes and the verdict on its
newest runs; for the whole history, the exit status (docs/history.md):

- 1: some series' newest runs are a regression the evidence supports: a standing change past the
  magnitude floor, its runs after against its runs before past the series' level (newest.py's
  change_pvalue), that was not yet one ``recent`` runs ago, or the last ``recent`` runs sitting
  past the floor from the level before them at the series' share of the suite-wide false-alarm
  level (newest.py); or a point that was ok before is broken in the newest run (its row there is
  oom, timeout, mismatch, error or crashed), as ``linbench compare`` calls it;
- 4: otherwise, some series measured in the newest run cannot judge it: too few runs since the
  series began or since its environment last changed, or its recent runs sit past the floor (or
  its newest run alone stands out) without the evidence to call it a regression yet; or a series
  has no ok point in the newest run to judge: its row there is ``skipped``, or the newest run has
  no row for it while the run before it had one;
- 0: otherwise.

The newest run is the newest of all the runs read, in the history's order (series.order_key),
whatever its points' statuses: a run whose points all crashed is the newest run, and every
series it broke is named. A series with no row in the newest run nor in the run before it left
the suite earlier: it is counted as left out (``History.left_out``), not judged, for a point
taken out of a suite weeks ago would otherwise keep every night inconclusive.

The false-alarm level ``max_pvalue`` is the suite's, per night: each of the history's series is
tested at its share, ``max_pvalue`` over the number of series (Bonferroni), so a larger suite
does not page more often on flat data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from linbench.history.detect import WINDOW, Change, change_points, measure_change, standing
from linbench.history.newest import INCONCLUSIVE as NEWEST_INCONCLUSIVE
from linbench.history.newest import REGRESSION as NEWEST_REGRESSION
from linbench.history.newest import change_pvalue, judge_newest
from linbench.history.observations import Observation
from linbench.history.series import Segment, Series, order_key

SKIPPED = "skipped"

PASS, REGRESSION, INCONCLUSIVE = 0, 1, 4
# The suite-wide chance of a false regression per night, shared among the series.
MAX_PVALUE = 0.01


@dataclass(frozen=True)
class Options:
    max_pvalue: float = MAX_PVALUE  # the suite's, per night (see the module's docstring)
    min_magnitude: float = 0.05  # the gate's floor: a change under 5% is not named
    recent: int = 3
    min_runs: int = 5  # a segment judged from fewer runs is insufficient data
    window: int = WINDOW


@dataclass(frozen=True)
class SegmentFinding:
    segment: Segment
    changes: tuple[Change, ...]
    insufficient: bool

    def run_at(self, index: int) -> Observation:
        return self.segment.observations[index]


@dataclass(frozen=True)
class SeriesFinding:
    series: Series
    segments: tuple[SegmentFinding, ...]
    current: bool  # measured (ok, with a time) in the newest run of the history
    recent_regression: Change | None
    unjudged: str | None  # why the newest run cannot be judged (None: it can, or the series left out)
    broken: str | None = None  # its status in the newest run, where it was ok before and is not now

    @property
    def left_out(self) -> bool:
        """Neither in the newest run nor in the run before it: a point that left the suite."""
        return not self.current and self.broken is None and self.unjudged is None

    @property
    def changed(self) -> bool:
        return any(s.changes for s in self.segments) or self.recent_regression is not None

    @property
    def splits(self) -> list[str]:
        return [s.segment.split_reason for s in self.segments if s.segment.split_reason]


@dataclass(frozen=True)
class History:
    findings: tuple[SeriesFinding, ...]
    runs: tuple[str, ...]  # every run, oldest first
    options: Options = field(default_factory=Options)

    @property
    def status(self) -> int:
        if any(f.recent_regression is not None or f.broken for f in self.findings):
            return REGRESSION
        if any(f.unjudged for f in self.findings):
            return INCONCLUSIVE
        return PASS

    @property
    def newest(self) -> str | None:
        return self.runs[-1] if self.runs else None

    @property
    def left_out(self) -> list[SeriesFinding]:
        return [f for f in self.findings if f.left_out]


def judge(series: list[Series], options: Options) -> History:
    """The verdict on every series that was ok in some run (a point never ok has no times to
    judge), the newest run being the newest of every run read, ok or not."""
    runs = _runs_in_order([o for s in series for o in (*s.observations, *s.others)])
    measured = [s for s in series if s.segments]
    count = max(len(measured), 1)
    findings = tuple(_finding(s, runs[-2:], options, count) for s in measured)
    return History(findings, tuple(runs), options)


def _finding(series: Series, latest: list[str], options: Options, count: int) -> SeriesFinding:
    """``latest``: the run before the newest (where there is one) and the newest."""
    alpha = options.max_pvalue / count  # this series' share of the suite's false-alarm level
    segments = tuple(_segment(s, options, alpha) for s in series.segments)
    last = segments[-1]
    current = last.segment.observations[-1].run == latest[-1]
    if not current:
        broken, unjudged = _not_measured(series, latest)
        return SeriesFinding(series, segments, False, None, unjudged, broken)
    recent, unjudged = None, None
    if last.insufficient:
        count_runs = len(last.segment.observations)
        since = f"since {last.segment.split_reason}" if last.segment.split_reason else "in all"
        unjudged = f"insufficient data: {count_runs} run(s) {since}, {options.min_runs} needed"
    else:
        recent, unjudged = _newest_runs(last, options, alpha, count)
    return SeriesFinding(series, segments, current, recent, unjudged)


def _not_measured(series: Series, latest: list[str]) -> tuple[str | None, str | None]:
    """For a series with no ok point in the newest run: its status there where it broke (it was
    ok before), else why the newest run cannot judge it; (None, None) where it left the suite
    before the run before the newest."""
    row = series.row_in(latest[-1])
    if row is not None and row.status != SKIPPED:
        return row.status, None
    if row is not None:
        return None, "skipped in the newest run, ok before: not judged"
    if len(latest) > 1 and series.row_in(latest[0]) is not None:
        return None, "not measured in the newest run (it has no row for the point; the run before had one): not judged"
    return None, None


def _newest_runs(last: SegmentFinding, options: Options, alpha: float, count: int) -> tuple[Change | None, str | None]:
    """The regression the newest runs of a segment show (a change newly standing, else a step
    within the last ``recent`` runs that the evidence supports), or why they cannot be judged."""
    values = last.segment.values
    change = last.changes[-1] if last.changes else None
    regressed = (
        change is not None and change.ratio - 1.0 > options.min_magnitude and change_pvalue(values, change) <= alpha
    )
    if change is not None and regressed and not _stood_before(values, change, options, alpha):
        return change, None
    found = judge_newest(values, last.changes, options.recent, options.min_magnitude, alpha, count)
    if found.verdict == NEWEST_REGRESSION and found.step is not None:
        before = values[found.start : found.start + found.runs_before]
        return measure_change(before, values[found.step :], found.step, found.pvalue or 0.0), None
    return None, found.reason if found.verdict == NEWEST_INCONCLUSIVE else None


def _stood_before(values: list[float], change: Change, options: Options, alpha: float) -> bool:
    """Whether ``change`` already stood ``recent`` runs ago (it was reported then): the history
    without its newest ``recent`` runs has a standing regression within a run of it."""
    earlier = values[: len(values) - options.recent]
    if len(earlier) < options.min_runs:
        return False
    found = change_points(earlier, alpha, options.min_magnitude, options.window)
    return any(
        abs(c.index - change.index) <= 1 and c.ratio - 1.0 > options.min_magnitude
        for c in supported(earlier, found, options.min_magnitude, alpha)
    )


def _segment(segment: Segment, options: Options, alpha: float) -> SegmentFinding:
    if len(segment.observations) < options.min_runs:
        return SegmentFinding(segment, (), insufficient=True)
    found = change_points(segment.values, alpha, options.min_magnitude, options.window)
    return SegmentFinding(segment, tuple(supported(segment.values, found, options.min_magnitude, alpha)), False)


def supported(values: list[float], changes: list[Change], floor: float, alpha: float) -> list[Change]:
    """The standing changes (detect.standing) whose evidence (newest.change_pvalue) passes
    ``alpha``, each measured between the neighbours that remain: Otava places changes, the
    evidence keeps them (at 20% noise it places false ones in most flat suites)."""
    kept = standing(values, changes, floor)
    while True:
        strong = [c for c in kept if change_pvalue(values, c) <= alpha]
        if len(strong) == len(kept):
            return kept
        kept = standing(values, strong, floor)


def _runs_in_order(observations: list[Observation]) -> list[str]:
    first: dict[str, Observation] = {}
    for observation in observations:
        first.setdefault(observation.run, observation)
    return [o.run for o in sorted(first.values(), key=order_key)]
