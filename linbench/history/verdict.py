"""What a history says: per series, its splits, its changes and whether its newest run can be
judged; for the whole history, the exit status (docs/history.md):

- 1: some series' newest change is a regression beyond the magnitude floor and lies among its last
  ``recent`` runs;
- 4: otherwise, some series measured in the newest run cannot judge it: too few runs since the
  series began or since its environment last changed (a split just before it), or the newest run
  alone moved past the floor (one slow night is not yet a change: the next run says which);
- 0: otherwise (no change, or changes that are improvements or older than ``recent`` runs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from linbench.history.detect import MAX_PVALUE, WINDOW, Change, change_points
from linbench.history.observations import Observation
from linbench.history.series import Segment, Series, order_key

PASS, REGRESSION, INCONCLUSIVE = 0, 1, 4


@dataclass(frozen=True)
class Options:
    max_pvalue: float = MAX_PVALUE
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

    def unconfirmed(self, change: Change) -> bool:
        """A change with only the newest run after it: a slow night and a change look alike."""
        return change.index >= len(self.segment.observations) - 1


@dataclass(frozen=True)
class SeriesFinding:
    series: Series
    segments: tuple[SegmentFinding, ...]
    current: bool  # measured in the newest run of the history
    recent_regression: Change | None
    unjudged: str | None  # why the newest run cannot be judged (None: it can, or it is not current)

    @property
    def changed(self) -> bool:
        return any(s.changes for s in self.segments)

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
        if any(f.recent_regression is not None for f in self.findings):
            return REGRESSION
        if any(f.unjudged for f in self.findings):
            return INCONCLUSIVE
        return PASS

    @property
    def newest(self) -> str | None:
        return self.runs[-1] if self.runs else None


def judge(series: list[Series], options: Options) -> History:
    runs = _runs_in_order([o for s in series for o in s.observations])
    newest = runs[-1] if runs else None
    findings = tuple(_finding(s, newest, options) for s in series)
    return History(findings, tuple(runs), options)


def _finding(series: Series, newest: str | None, options: Options) -> SeriesFinding:
    segments = tuple(_segment(s, options) for s in series.segments)
    last = segments[-1]
    current = last.segment.observations[-1].run == newest
    recent, unjudged = None, None
    if current and last.changes and not last.insufficient:
        change = last.changes[-1]
        runs_since = len(last.segment.observations) - change.index
        beyond = change.regression and change.ratio - 1.0 > options.min_magnitude
        if beyond and last.unconfirmed(change):
            unjudged = (
                f"the newest run alone is {change.ratio:.3f}× slower: a change or a slow night, the next run says"
            )
        elif beyond and runs_since <= options.recent:
            recent = change
    if current and last.insufficient:
        count = len(last.segment.observations)
        since = f"since {last.segment.split_reason}" if last.segment.split_reason else "in all"
        unjudged = f"insufficient data: {count} run(s) {since}, {options.min_runs} needed"
    return SeriesFinding(series, segments, current, recent, unjudged)


def _segment(segment: Segment, options: Options) -> SegmentFinding:
    if len(segment.observations) < options.min_runs:
        return SegmentFinding(segment, (), insufficient=True)
    changes = change_points(segment.values, options.max_pvalue, options.min_magnitude, options.window)
    kept = tuple(c for c in changes if abs(c.ratio - 1.0) > options.min_magnitude)
    return SegmentFinding(segment, kept, insufficient=False)


def _runs_in_order(observations: list[Observation]) -> list[str]:
    first: dict[str, Observation] = {}
    for observation in observations:
        first.setdefault(observation.run, observation)
    return [o.run for o in sorted(first.values(), key=order_key)]
