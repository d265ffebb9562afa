"""The sequential A/B's decisions replayed on rounds it measured, for scripts/gate_recipe_check.py:
each point's rounds on both sides read back from an A/B's merged folders, and, for a +30% planted
on one point of the current side, the verdict the A/B would have reached round by round
(linbench/gate/sequential.py): the first round at which the planted point is decided, or open
when the rounds measured were too few to decide it (the A/B would have gone on)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from linbench.gate.rule import TimeRule, judge
from linbench.gate.sequential import OPEN, REGRESSION
from linbench.gate.statistic import SHOWN_COLUMN, process_times
from linbench.results.processes import ProcessResult
from linbench.results.protocol import ProcessProtocol, judged
from linbench.results.record import Key, row_key
from linbench.results.store import RunStore
from linbench.units import as_number

RULE = TimeRule(protocol=ProcessProtocol.rounds(3, 100))


@dataclass(frozen=True)
class Replayed:
    """A planted point's fate: ``caught`` (a regression), ``cleared`` (a miss: the A/B would
    have passed it) or ``open`` (undecided in the rounds measured), and at which round."""

    outcome: str
    rounds: int


def rounds_by_point(folder: Path) -> dict[Key, list[ProcessResult]]:
    """Each point's processes (one per round, in order) of a merged A/B side."""
    found: dict[Key, list[ProcessResult]] = {}
    for row in sorted(RunStore(folder).process_rows(), key=lambda r: int(r.get("process") or 0)):
        found.setdefault(row_key(row), []).append(ProcessResult.from_row(row))
    return found


def times(base: Sequence[ProcessResult], cur: Sequence[ProcessResult], cpu: bool) -> tuple[list[float], list[float]]:
    """Each side's figures of the statistic the gate judges the point on (chosen for both)."""
    _, base_times, cur_times = process_times(judged(base, cpu), judged(cur, cpu), cpu)
    return base_times, cur_times


def shown_ms(processes: Sequence[ProcessResult], statistic: str) -> list[float]:
    """The processes' times a call in milliseconds of ``statistic`` (their CPU times where the
    judged figure is paced, in reference calls)."""
    found = [as_number(getattr(p, SHOWN_COLUMN[statistic])) for p in processes]
    return [float(v) for v in found if v is not None and v > 0]


def replay(base: Sequence[float], cur: Sequence[float], factor: float = 1.0, first: int = 3) -> Replayed:
    """Judge the first k rounds, k from ``first`` on, with the current side times ``factor``:
    the first decided outcome, as the A/B reaches it."""
    count = min(len(base), len(cur))
    for k in range(first, count + 1):
        judgement = judge(base[:k], [t * factor for t in cur[:k]], RULE)
        if judgement.decision is not None and judgement.decision != OPEN:
            return Replayed("caught" if judgement.decision == REGRESSION else "cleared", k)
    return Replayed("open", count)


def rounds_spread(folder: Path) -> tuple[int, float, int]:
    """The fewest, median and most rounds any point of a merged side got."""
    counts = sorted(len(p) for p in rounds_by_point(folder).values())
    if not counts:
        return 0, 0.0, 0
    middle = len(counts) // 2
    median = counts[middle] if len(counts) % 2 else (counts[middle - 1] + counts[middle]) / 2
    return counts[0], float(median), counts[-1]


@dataclass(frozen=True)
class PointFigures:
    """What one point measured in one A/B: its judged time a call (ms), repetitions a process,
    the spread between its processes (σ̂, both sides pooled) and the rounds it got."""

    ms: float
    repetitions: float
    spread: float | None
    rounds: int


def point_figures(base: Path, cur: Path) -> dict[Key, PointFigures]:
    """Each point of a merged A/B's two sides, as PointFigures."""
    base_rounds, cur_rounds = rounds_by_point(base), rounds_by_point(cur)
    found = {}
    for key in sorted(base_rounds.keys() & cur_rounds.keys()):
        b, c = base_rounds[key], cur_rounds[key]
        cpu = "cpu" in key
        kept = [*judged(b, cpu), *judged(c, cpu)]
        statistic, bt, ct = process_times(judged(b, cpu), judged(c, cpu), cpu)
        if not bt or not ct:
            continue
        judgement = judge(bt, ct, RULE)
        samples = sorted(float(p.samples or 0) for p in (*b, *c))
        ms = sorted(shown_ms(kept, statistic))
        found[key] = PointFigures(ms[len(ms) // 2], samples[len(samples) // 2], judgement.spread, len(c))
    return found
