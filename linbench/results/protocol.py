"""The repeated-process protocol, declared once: how many worker processes measure a point, when
a point gets more, and when ``linbench compare`` trusts what its processes say.

Repetitions inside one process share that process's host state and move together, so the
process is the unit of replication (docs/gate.md). The runner measures each point in
``wanted`` processes and adds more, up to ``most``, while they span more than
``extend_above``; past ``trust_processes``, only while the standard error they would give a
comparison is still above ``enough_se`` (a point gets the processes it needs, not ``most``).
The gate judges time only with ``min_to_judge`` processes or more on a side,
and trusts a side's spread when its processes span at most ``extend_above`` (the runner saw no
need for more) or number ``trust_processes`` (a MAD from fewer, spread wider, is itself too
unreliable). meta.json records the protocol as ``timing_protocol`` (``meta()``), and compare
reads it back (``from_meta()``), so the numbers that extended a point are the numbers that judge
it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, overload

from linbench.results.processes import (
    ProcessResult,
    gated_figures,
    log_spread,
    median_difference_se,
    timed_on_cpu_clock,
)

NAME = "processes-v1"
# A point whose processes disagree by more than this (log of slowest over fastest) gets more.
EXTEND_ABOVE = 0.02
# As many processes as this are trusted whatever they span; a run with several processes per
# point extends up to it unless told otherwise.
TRUST_PROCESSES = 20
# Past TRUST_PROCESSES a disagreeing point gets another process only while the standard error
# of a comparison of two sides like it (1.2533·σ̂·√(2/K), gate/rule.py) is above this. The gate
# fails a change past 5 standard errors; 5 + 2.33 of them (2.33: the 99th percentile of its
# own noise) fit in log 1.3 at 0.0358, so a point settled here shows +30% in 99 of 100 trials,
# at a threshold near 19%.
ENOUGH_SE = 0.035
# The threshold that standard error gives the gate's 5-standard-error rule: about 19%.
ENOUGH_THRESHOLD = math.expm1(5 * ENOUGH_SE)
# Fewer processes than this on a side: no spread to judge time with (unverified).
MIN_TO_JUDGE = 3
# What a gate asks for (a gate suite's ``processes``, linbench ab's ``--rounds``): enough for
# a point whose processes agree to be judged without more.
GATE_PROCESSES = 5
SHUFFLED_ROUNDS = "first process in plan order, then interleaved rounds in shuffled order"
AB_ROUNDS = "linbench ab: one process per point per round, rounds alternated ABBA"
# When a point stops getting processes: SPREAD, while its processes disagree (run's processes,
# and linbench ab's rounds before it judged in time); DECIDED, once its verdict is decided at the
# gate's error rates (linbench ab: both sides are in hand after every round, gate/sequential.py).
SPREAD, DECIDED = "spread", "decided"


class ProtocolError(ValueError):
    """A meta.json ``timing_protocol`` whose numbers cannot be read."""


@dataclass(frozen=True)
class ProcessProtocol:
    """How many fresh worker processes measure each point, in what order, and what the gate
    needs of them."""

    wanted: int = 1
    most: int = 1
    extend_above: float = EXTEND_ABOVE
    trust_processes: int = TRUST_PROCESSES
    min_to_judge: int = MIN_TO_JUDGE
    # Past trust_processes, extend only while the comparison's standard error is above this;
    # None: to ``most`` while the processes disagree (runs recorded before it).
    enough_se: float | None = ENOUGH_SE
    seed: int = 0  # of the shuffled order of each round
    order: str = SHUFFLED_ROUNDS
    name: str = NAME
    # SPREAD or DECIDED: how the runs were extended, and so how compare judges them (rule.py).
    stop: str = SPREAD

    @classmethod
    def of(cls, wanted: int | None, most: int | None) -> ProcessProtocol:
        """``wanted`` processes (1 when None), extended up to ``most`` (as many as the gate
        trusts whatever they span, for more than one, when None) for points whose processes
        disagree."""
        wanted = wanted or 1
        if most is None:
            most = wanted if wanted == 1 else max(wanted, TRUST_PROCESSES)
        if most < wanted:
            raise ValueError(f"--max-processes {most} is fewer than --processes {wanted}")
        return cls(wanted=wanted, most=most)

    @classmethod
    def rounds(cls, count: int, most: int | None = None) -> ProcessProtocol:
        """linbench ab's: ``count`` rounds, each one process per point, and more, up to ``most``
        (default ``count``: none), while a point's verdict is not decided (DECIDED)."""
        most = count if most is None else most
        if most < count:
            raise ValueError(f"--max-rounds {most} is fewer than --rounds {count}")
        return cls(wanted=count, most=most, order=AB_ROUNDS, stop=DECIDED)

    @property
    def sequential(self) -> bool:
        """Whether points were measured until decided (DECIDED), and are judged so."""
        return self.stop == DECIDED

    def needs_more(self, processes: Sequence[ProcessResult], cpu: bool = False) -> bool:
        """Whether a point measured in ``processes`` (on a CPU: ``cpu``) needs another: fewer
        than ``wanted``, or as many but disagreeing by more than ``extend_above`` (in
        log(max/min) of the figures the gate judges: on a CPU each process's paced CPU time, CPU
        time or p20, of the processes it judges) and fewer than ``most``."""
        return self.extends(len(processes), lambda: gated_figures(judged(processes, cpu), cpu))

    def extends(self, count: int, times: Callable[[], Sequence[float]]) -> bool:
        """Whether a point with ``count`` processes (or ab rounds) gets another: fewer than
        ``wanted``, or fewer than ``most`` while they are too few to judge (``min_to_judge``:
        two that agree still cannot be judged) or ``times()`` (the ones judged) disagree by more
        than ``extend_above`` and, from ``trust_processes`` on, would still give a comparison a
        standard error above ``enough_se``. The one rule for run's processes and ab's rounds."""
        if count < self.wanted:
            return True
        if count >= self.most:
            return False
        if count < self.min_to_judge:
            return True
        judged_times = times()
        if log_range(judged_times) <= self.extend_above:
            return False
        return count < self.trust_processes or self.enough_se is None or comparison_se(judged_times) > self.enough_se

    def can_judge(self, count: int) -> bool:
        """Whether a side with ``count`` processes has a spread to judge time with."""
        return count >= self.min_to_judge

    def trusts_spread(self, medians: Sequence[float]) -> bool:
        """Whether a side's spread between ``medians`` (its process medians) is trusted: they
        agree within ``extend_above``, or number ``trust_processes`` or more."""
        return len(medians) >= self.trust_processes or log_range(medians) <= self.extend_above

    def stricter(self, other: ProcessProtocol) -> ProcessProtocol:
        """The protocol two runs' processes are judged by together: the larger ``min_to_judge``
        and ``trust_processes``, the smaller ``extend_above``. A difference between the two can
        then make a point noisy or unverified, never a regression."""
        return replace(
            self,
            stop=DECIDED if self.sequential and other.sequential else SPREAD,
            extend_above=min(self.extend_above, other.extend_above),
            trust_processes=max(self.trust_processes, other.trust_processes),
            min_to_judge=max(self.min_to_judge, other.min_to_judge),
        )

    def meta(self) -> dict[str, Any]:
        """meta.json's ``timing_protocol``: what compare needs to trust the process data."""
        record: dict[str, Any] = {
            "name": self.name,
            "processes": self.wanted,
            "max_processes": self.most,
            "extend_above": self.extend_above,
            "trust_processes": self.trust_processes,
            "min_to_judge": self.min_to_judge,
            "order": self.order,
        }
        if self.enough_se is not None:
            record["enough_se"] = self.enough_se
        if self.order == SHUFFLED_ROUNDS:  # the one order that has a seed
            record["seed"] = self.seed
        if self.sequential:  # absent: SPREAD, as every run recorded before it
            record["stop"] = self.stop
        return record

    @classmethod
    def from_meta(cls, record: Any) -> ProcessProtocol:
        """The protocol a run recorded as meta.json's ``timing_protocol``; the defaults for what
        it lacks (a run made before the record, or before a key). ProtocolError for a value that
        is not a number of the right kind."""
        if not isinstance(record, Mapping):
            record = {}
        wanted = _count(record, "processes", 1, least=1)
        return cls(
            wanted=wanted,
            most=_count(record, "max_processes", wanted, least=1),
            extend_above=_fraction(record, "extend_above", EXTEND_ABOVE),
            trust_processes=_count(record, "trust_processes", TRUST_PROCESSES, least=0),
            min_to_judge=_count(record, "min_to_judge", MIN_TO_JUDGE, least=0),
            enough_se=_fraction(record, "enough_se", None),
            seed=_count(record, "seed", 0, least=0),
            order=str(record.get("order", record.get("source", SHUFFLED_ROUNDS))),
            name=str(record.get("name", NAME)),
            stop=DECIDED if record.get("stop") == DECIDED else SPREAD,
        )


def comparison_se(times: Sequence[float]) -> float:
    """The standard error of the log ratio of two sides each measured like these process
    ``times`` (as many, spread as widely): 1.2533·σ̂·√(2/K), as gate/rule.py judges it."""
    spread = log_spread(times)
    return 0.0 if spread is None else median_difference_se(spread, len(times), len(times))


def log_range(medians: Sequence[float]) -> float:
    """log(max / min) of the medians: how far the processes disagree (0 for one)."""
    positive = [m for m in medians if m and m > 0]
    return math.log(max(positive) / min(positive)) if len(positive) > 1 else 0.0


def _count(record: Mapping[str, Any], key: str, default: int, least: int) -> int:
    value = record.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ProtocolError(f"meta.json's timing_protocol has {key} {value!r}: expected a whole number >= {least}")
    return value


@overload
def _fraction(record: Mapping[str, Any], key: str, default: float) -> float: ...
@overload
def _fraction(record: Mapping[str, Any], key: str, default: None) -> float | None: ...
def _fraction(record: Mapping[str, Any], key: str, default: float | None) -> float | None:
    value = record.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ProtocolError(f"meta.json's timing_protocol has {key} {value!r}: expected a number >= 0")
    return float(value)


def judged(processes: Sequence[ProcessResult], cpu: bool) -> list[ProcessResult]:
    """The processes of one side of a point (on a CPU: ``cpu``) that the gate judges: every one
    where each is judged on its CPU time (preemption adds none to it: processes.timed_on_cpu_clock),
    else as judged_processes says."""
    if cpu and processes and all(timed_on_cpu_clock(p) for p in processes):
        return list(processes)
    kept = judged_processes([bool(p.oversubscribed) for p in processes])
    return [p for p, keep in zip(processes, kept, strict=True) if keep]


def judged_processes(oversubscribed: Sequence[bool]) -> list[bool]:
    """Which of a side's processes of a point the gate judges, by whether each was
    oversubscribed: all of them, or only the others where at least MIN_TO_JUDGE others remain
    (a process whose cores other processes took is slower by the scheduler's share, docs/gate.md)."""
    clean = [not crowded for crowded in oversubscribed]
    return clean if any(oversubscribed) and sum(clean) >= MIN_TO_JUDGE else [True] * len(clean)
