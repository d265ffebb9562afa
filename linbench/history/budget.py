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

from linbench.history.observations import KEY_FIELDS, Observation, cell_text, of_run
from linbench.history.series import statistic_of
from linbench.report.load import Run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUDGET_VERSION = 1
LIMITS = ("time_ms", "memory_bytes")
# The columns a budget point may name (the device as its type: cpu, cuda).
NAMES = KEY_FIELDS


class BudgetError(ValueError):
    """A budget file that cannot be read: one line, naming the file."""


@dataclass(frozen=True)
class Limit:
    match: dict[str, str]
    time_ms: float | None
    memory_bytes: float | None

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
    unknown = set(point) - set(NAMES) - set(LIMITS)
    if unknown:
        raise BudgetError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join((*NAMES, *LIMITS))})"
        )
    limits = {name: point.get(name) for name in LIMITS}
    if all(v is None for v in limits.values()):
        raise BudgetError(f"{where} sets neither time_ms nor memory_bytes")
    for name, value in limits.items():
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf
        ):
            raise BudgetError(f"{where}: {name} {value!r} is not a finite number above 0")
    match = {name: cell_text(point[name]) for name in NAMES if name in point}
    return Limit(match, limits["time_ms"], limits["memory_bytes"])


def judge(run: Run, budget: Budget) -> tuple[list[Overrun], list[int]]:
    """Each point of ``run`` over a limit that matches it, and the limits (1-based) no point matched."""
    overruns: list[Overrun] = []
    matched: set[int] = set()
    observations = of_run(run)
    memory = _memory(run, observations)
    for observation in observations:
        key = dict(zip(KEY_FIELDS, observation.key, strict=True))
        for number, limit in enumerate(budget.limits, start=1):
            if not limit.matches(key):
                continue
            matched.add(number)
            time_ms = observation.value(statistic_of([observation]))
            checks = (("time", time_ms, limit.time_ms), ("memory", memory.get(observation.key), limit.memory_bytes))
            for what, measured, bound in checks:
                if measured is not None and bound is not None and measured > bound * (1 + budget.tolerance):
                    overruns.append(Overrun(_name(key), what, measured, bound))
    return overruns, [n for n in range(1, len(budget.limits) + 1) if n not in matched]


def write(run: Run, margin: float) -> str:
    """A budget file's text: every ok point of ``run`` with limits ``margin`` above what it measured."""
    observations = of_run(run)
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
        time_ms = observation.value(statistic_of([observation]))
        if time_ms is not None:
            lines.append(f"time_ms = {time_ms * (1 + margin):.6g}")
        if (peak := memory.get(observation.key)) is not None:
            lines.append(f"memory_bytes = {int(peak * (1 + margin))}")
    return "\n".join(lines) + "\n"


def _memory(run: Run, observations: list[Observation]) -> dict[tuple[str, ...], float]:
    """Each ok point's allocator peak: alloc_peak_bytes where recorded (a CPU's), else peak_bytes."""
    peaks = {}
    for observation, row in _rows(run, observations):
        for column in ("alloc_peak_bytes", "peak_bytes"):
            value = row.get(column)
            if value is not None and value == value and float(value) > 0:
                peaks[observation.key] = float(value)
                break
    return peaks


def _rows(run: Run, observations: list[Observation]) -> list[tuple[Observation, dict[str, Any]]]:
    results = run.results.copy()
    results["device_type"] = results["device"].astype(str).str.split(":").str[0]
    by_key = {tuple(cell_text(row.get(name)) for name in KEY_FIELDS): row for row in results.to_dict("records")}
    return [(o, by_key[o.key]) for o in observations if o.key in by_key]


def _name(key: dict[str, str]) -> str:
    shape = f"B{key['batch']} H{key['heads']} S{key['seq']} D{key['dim_k']}"
    return f"{key['variant']}:{key['impl']} {key['mode']} {key['dtype']} {shape}"


def _toml(value: str) -> str:
    if value in ("True", "False"):
        return value.lower()
    try:
        return str(int(value))
    except ValueError:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
