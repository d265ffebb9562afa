"""Absolute budgets: per-point upper limits on time and memory, for a job with no base run to
compare against (attention-gym fails CI when a case exceeds its microsecond budget).

A budget file is TOML: ``budget_version``, a ``tolerance`` (a point passes up to its limit times
1 + tolerance) and one ``[[point]]`` table per limit, naming the point by any of the gate's match
columns (those left out match every value: ``variant``/``impl`` alone bound every shape) with
``time_ms`` and/or ``memory_bytes``. The time judged is the gate's (observations.py); the memory
is the point's allocator peak (``alloc_peak_bytes`` on a CPU where recorded, else ``peak_bytes``).
``write`` makes one from a run with a margin over what it measured."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linbench.history.observations import KEY_FIELDS, STATISTICS, Observation, cell_text, of_run, point_rows
from linbench.history.series import statistic_of
from linbench.report.load import Run
from linbench.results.schema import FAILED_STATUSES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUDGET_VERSION = 1
LIMITS = ("time_ms", "memory_bytes")
# The key naming the gate's statistic a point's time_ms bounds (written by ``write``).
STATISTIC = "statistic"
# The columns a budget point may name (the device as its type: cpu, cuda).
NAMES = KEY_FIELDS


class BudgetError(ValueError):
    """A budget file that cannot be read: one line, naming the file."""


@dataclass(frozen=True)
class Limit:
    match: dict[str, str]
    time_ms: float | None
    memory_bytes: float | None
    # The gate's statistic time_ms bounds (a CUDA graph's replay time is not an eager median):
    # judged on that one alone; None (a budget written by hand) is the point's own (statistic_of).
    statistic: str | None = None

    def matches(self, key: dict[str, str]) -> bool:
        return all(key.get(name) == value for name, value in self.match.items())


@dataclass(frozen=True)
class Budget:
    limits: tuple[Limit, ...]
    tolerance: float = 0.0


@dataclass(frozen=True)
class Overrun:
    point: str
    what: str  # time or memory
    measured: float
    limit: float

    @property
    def by(self) -> float:
        return self.measured / self.limit - 1.0


def read(path: Path) -> Budget:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BudgetError(f"budget {str(path)!r} cannot be read: {exc}") from None
    version = data.get("budget_version")
    if not isinstance(version, int) or version > BUDGET_VERSION:
        raise BudgetError(
            f"budget {str(path)!r} has budget_version {version!r}; this linbench reads up to {BUDGET_VERSION}"
        )
    tolerance = data.get("tolerance", 0.0)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < math.inf:
        raise BudgetError(f"budget {str(path)!r}: tolerance {tolerance!r} is not a finite number ≥ 0")
    points = data.get("point", [])
    if not isinstance(points, list) or not points:
        raise BudgetError(f"budget {str(path)!r} has no [[point]] limit")
    return Budget(tuple(_limit(path, i, p) for i, p in enumerate(points, start=1)), float(tolerance))


def _limit(path: Path, index: int, point: Any) -> Limit:
    where = f"budget {str(path)!r} point {index}"
    if not isinstance(point, dict):
        raise BudgetError(f"{where} is not a table")
    unknown = set(point) - set(NAMES) - set(LIMITS) - {STATISTIC}
    if unknown:
        raise BudgetError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join((*NAMES, *LIMITS, STATISTIC))})"
        )
    statistic = point.get(STATISTIC)
    if statistic is not None and statistic not in STATISTICS:
        raise BudgetError(f"{where}: statistic {statistic!r} is not one of {', '.join(STATISTICS)}")
    limits = {name: point.get(name) for name in LIMITS}
    if all(v is None for v in limits.values()):
        raise BudgetError(f"{where} sets neither time_ms nor memory_bytes")
    for name, value in limits.items():
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf
        ):
            raise BudgetError(f"{where}: {name} {value!r} is not a finite number above 0")
    match = {name: cell_text(point[name]) for name in NAMES if name in point}
    return Limit(match, limits["time_ms"], limits["memory_bytes"], statistic)


@dataclass(frozen=True)
class Unjudged:
    """A point a limit matched whose figure could not be judged: it ended without one (its
    status), or its memory was not recorded."""

    point: str
    why: str


@dataclass(frozen=True)
class Judgement:
    """What a budget found in a run. ``broken`` holds the points a limit matched that failed
    (mismatch, error, crashed), timed out against a time limit or ran out of memory against a
    memory limit: each is over its budget. ``unjudged`` holds the other points a limit matched
    but could not judge, and ``unmatched`` the limits (1-based) that judged no point at all."""

    overruns: list[Overrun]
    broken: list[Unjudged]
    unjudged: list[Unjudged]
    unmatched: list[int]

    @property
    def failed(self) -> bool:
        return bool(self.overruns or self.broken)


def judge(run: Run, budget: Budget) -> Judgement:
    """Each point of ``run`` against every limit that matches it."""
    overruns: list[Overrun] = []
    judged: set[int] = set()
    everything = of_run(run)
    observations = [o for o in everything if o.ok]  # the points with a time
    memory = _memory(run, observations)
    unjudged: list[Unjudged] = []
    for observation in observations:
        key = dict(zip(KEY_FIELDS, observation.key, strict=True))
        matching = _matching(budget, key)
        for number, limit in matching:
            figures = {"time": _time(observation, limit), "memory": memory.get(observation.key)}
            bounds = {"time": limit.time_ms, "memory": limit.memory_bytes}
            for what, bound in bounds.items():
                measured = figures[what]
                if measured is None or bound is None:
                    continue
                judged.add(number)
                if measured > bound * (1 + budget.tolerance):
                    overruns.append(Overrun(_name(key), what, measured, bound))
        unjudged += _unrecorded(observation, matching, memory.get(observation.key) is not None)
    broken, ended = _ended_without_figure([o for o in everything if not o.ok], budget, judged)
    unmatched = [n for n in range(1, len(budget.limits) + 1) if n not in judged]
    return Judgement(overruns, broken, unjudged + ended, unmatched)


def _time(observation: Observation, limit: Limit) -> float | None:
    """The time ``limit`` bounds: its statistic's (None where the run did not record it), else
    the point's own."""
    return observation.value(limit.statistic or statistic_of([observation]))


def _unrecorded(observation: Observation, matching: list[tuple[int, Limit]], has_memory: bool) -> list[Unjudged]:
    """The figures a matching limit bounds that this point did not record, one line a point."""
    key = dict(zip(KEY_FIELDS, observation.key, strict=True))
    missing = [
        f"its {limit.statistic} time was not recorded (the limit is on it)"
        for _, limit in matching
        if limit.time_ms is not None and limit.statistic is not None and observation.value(limit.statistic) is None
    ]
    if not has_memory and any(limit.memory_bytes is not None for _, limit in matching):
        missing.append("its memory was not recorded")
    return [Unjudged(_name(key), "; ".join(dict.fromkeys(missing)))] if missing else []


def _matching(budget: Budget, key: dict[str, str]) -> list[tuple[int, Limit]]:
    return [(number, limit) for number, limit in enumerate(budget.limits, start=1) if limit.matches(key)]


def _ended_without_figure(
    ended: list[Observation], budget: Budget, judged: set[int]
) -> tuple[list[Unjudged], list[Unjudged]]:
    """The points a limit matched that ended other than ok: over the budget (failed, or timed
    out or out of memory against a limit that bounds that), which judges their limits, or not
    judged (skipped, or out of every matching limit's reach)."""
    broken: list[Unjudged] = []
    unjudged: list[Unjudged] = []
    for observation in ended:
        key, status = dict(zip(KEY_FIELDS, observation.key, strict=True)), observation.status
        matching = _matching(budget, key)
        over = [
            number
            for number, limit in matching
            if status in FAILED_STATUSES
            or (status == "timeout" and limit.time_ms is not None)
            or (status == "oom" and limit.memory_bytes is not None)
        ]
        judged.update(over)
        if matching:
            (broken if over else unjudged).append(Unjudged(_name(key), f"it ended {status}"))
    return broken, unjudged


def write(run: Run, margin: float) -> str:
    """A budget file's text: every ok point of ``run`` with limits ``margin`` above what it measured."""
    observations = [o for o in of_run(run) if o.ok]  # the points with a time
    if not observations:  # run --budget would refuse a budget without a limit: say so now
        raise BudgetError(f"{run.name} has no ok point with a time: a budget of it would hold no limit")
    memory = _memory(run, observations)
    lines = [
        f"# linbench budget from {run.name} (commit {run.meta.get('git_sha', '?')}), "
        f"{margin:.0%} above what it measured.",
        "# A point passes up to its limits times 1 + tolerance; `linbench run --budget FILE` exits 1 past them.",
        f"budget_version = {BUDGET_VERSION}",
        "tolerance = 0.0",
    ]
    for observation in observations:
        lines.append("\n[[point]]")
        for name, value in zip(KEY_FIELDS, observation.key, strict=True):
            if value != "":
                lines.append(f"{name} = {_toml(value)}")
        statistic = statistic_of([observation])
        time_ms = observation.value(statistic)
        if time_ms is not None:
            lines.append(f"time_ms = {time_ms * (1 + margin):.6g}")
            lines.append(f'{STATISTIC} = "{statistic}"')
        if (peak := memory.get(observation.key)) is not None:
            lines.append(f"memory_bytes = {int(peak * (1 + margin))}")
    return "\n".join(lines) + "\n"


def _memory(run: Run, observations: list[Observation]) -> dict[tuple[str, ...], float]:
    """Each ok point's allocator peak: alloc_peak_bytes where recorded (a CPU's), else peak_bytes."""
    rows = dict(point_rows(run))
    peaks = {}
    for observation in observations:
        row = rows.get(observation.key)
        if row is None:
            continue
        for column in ("alloc_peak_bytes", "peak_bytes"):
            value = row.get(column)
            if value is not None and value == value and float(value) > 0:
                peaks[observation.key] = float(value)
                break
    return peaks


# The key's columns a point's name shows where they set it apart (a value of its own), so that
# two points never share a name: (column, label, the column whose value it repeats when unset).
_NAMED_APART = (
    ("dim_v", "Dv", "dim_k"),
    ("kv_heads", "kv", "heads"),
    ("v_heads", "vh", "heads"),
    ("chunk", "chunk ", ""),
    ("tokens_per_step", "T", ""),
    ("state_dtype", "state ", ""),
    ("state_layout", "", ""),
)
# How a key's column says it is not set (a run row's chunk and tokens_per_step are 0).
_UNSET = ("", "0", "None")


def _name(key: dict[str, str]) -> str:
    """The point in words: what ran and its shape, and any other column of its key it sets."""
    shape = f"B{key['batch']} H{key['heads']} S{key['seq']} D{key['dim_k']}"
    extras = [
        f"{label}{key[column]}"
        for column, label, same in _NAMED_APART
        if str(key.get(column)) not in _UNSET and (not same or key.get(column) != key.get(same))
    ]
    masking = ["bidirectional"] if str(key.get("causal")).lower() == "false" else []
    return " ".join([f"{key['variant']}:{key['impl']} {key['mode']} {key['dtype']} {shape}", *extras, *masking])


def _toml(value: str) -> str:
    if value in ("True", "False"):
        return value.lower()
    try:
        return str(int(value))
    except ValueError:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
