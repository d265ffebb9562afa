"""Observations grouped into one series per point, in the order the runs were made, and cut into
segments where the environment changed: a change of device, driver, torch, cores or memory, or
ceilings that moved by more than CEILING_RATIO, or of the settings the point was timed with (its
torch threads, CUDA-graph replays, the timing protocol), is not a change of the code, and a series
is never judged across one (the split is reported instead).

A field a run did not record (a run older than the record, a schema 1 history file's rows) is
not compared: it neither splits a series nor hides a change, for a run is compared with the
latest value its segment recorded of each field, not with its neighbour alone. Only ok
observations make segments; a series keeps its other rows (``others``: oom, crashed, skipped...)
for the newest run's verdict (verdict.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields, replace

from linbench.history.observations import STATISTICS, Environment, Observation

# Measured ceilings (copy bandwidth, matmul rate) vary from run to run on one machine, by up to
# about 20% on the loaded 2-core development machine; a machine whose ceilings moved by more
# than this is another machine, or the same one in another state (clocks, power cap).
CEILING_RATIO = 1.5
_MEASURED = ("copy_gb_per_s", "matmul_tflops")


@dataclass(frozen=True)
class Segment:
    """A run of observations of one point in one environment, judged on ``statistic`` (the first
    of the gate's statistics every observation has)."""

    observations: tuple[Observation, ...]
    statistic: str
    split_reason: str | None  # why it starts here (None: the series' first segment)

    @property
    def values(self) -> list[float]:
        return [float(o.value(self.statistic) or 0.0) for o in self.observations]


@dataclass(frozen=True)
class Series:
    key: tuple[str, ...]
    segments: tuple[Segment, ...]  # none where the point was never ok
    others: tuple[Observation, ...] = ()  # its rows that are not ok, in run order

    @property
    def observations(self) -> list[Observation]:
        """Its ok observations, in run order."""
        return [o for s in self.segments for o in s.observations]

    def row_in(self, run: str) -> Observation | None:
        """Its observation in ``run``, ok or not; None where that run has no row for it."""
        return next((o for o in (*self.observations, *self.others) if o.run == run), None)


def order_key(observation: Observation) -> tuple[str, str, str]:
    """Runs in the order their code was made (the commit's time where recorded), then the order
    they ran: a rerun of one commit sits beside it."""
    return (observation.commit_time or observation.started_at, observation.started_at, observation.run)


def build(observations: list[Observation]) -> list[Series]:
    """One series per point key, its ok observations cut into segments at every change of
    environment, its other rows beside them."""
    by_key: dict[tuple[str, ...], list[Observation]] = defaultdict(list)
    for observation in observations:
        by_key[observation.key].append(observation)
    return [_series(key, sorted(obs, key=order_key)) for key, obs in sorted(by_key.items())]


def _series(key: tuple[str, ...], ordered: list[Observation]) -> Series:
    ok = [o for o in ordered if o.ok]
    return Series(key, _segments(ok) if ok else (), tuple(o for o in ordered if not o.ok))


def environment_change(before: Environment, after: Environment) -> str | None:
    """What changed between two runs' environments, in words; None where nothing that matters did."""
    changes = []
    for field in fields(Environment):
        old, new = getattr(before, field.name), getattr(after, field.name)
        if field.name in _MEASURED:
            if old and new and max(old, new) / min(old, new) > CEILING_RATIO:
                changes.append(f"{field.name} {old:.3g} → {new:.3g}")
        elif old and new and old != new:
            changes.append(f"{field.name} {old} → {new}")
    return ", ".join(changes) or None


def _segments(ordered: list[Observation]) -> tuple[Segment, ...]:
    pieces: list[tuple[list[Observation], str | None]] = []
    known = Environment()  # the latest value the current piece recorded of each field
    for observation in ordered:
        reason = environment_change(known, observation.environment) if pieces else "first"
        if reason is not None:
            pieces.append(([observation], None if reason == "first" else reason))
            known = Environment()
        else:
            pieces[-1][0].append(observation)
        known = _recorded(known, observation.environment)
    return tuple(Segment(tuple(obs), statistic_of(obs), reason) for obs, reason in pieces)


def _recorded(known: Environment, newer: Environment) -> Environment:
    """``known`` with each field ``newer`` recorded taken from ``newer``."""
    return replace(known, **{f.name: value for f in fields(Environment) if (value := getattr(newer, f.name))})


def statistic_of(observations: list[Observation]) -> str:
    """The first of the gate's statistics every one of ``observations`` has."""
    for statistic in STATISTICS:
        if all(o.value(statistic) for o in observations):
            return statistic
    raise ValueError("an observation without a median time")  # segments take ok observations alone
