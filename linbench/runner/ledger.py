"""Where a run's wall time goes: timed repetitions, worker processes, correctness gates.

The harness's own cost is everything outside the timed repetitions (process start, imports,
the kernel library's load, the fp64 gate, warm-up, writing rows). ``linbench run`` prints the
timed share at the end and meta.json keeps the figures, summed over the sessions of a
resumed run, so a slow harness is measured rather than guessed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass
class TimeLedger:
    """Seconds of one session of a run, by where they went."""

    wall_s: float = 0.0
    timed_s: float = 0.0  # inside timed repetitions
    processes_s: float = 0.0  # inside measuring worker processes, hand-over to result
    gates_s: float = 0.0  # inside correctness-gate worker processes
    processes: int = 0
    gates: int = 0
    _started: float | None = None

    def start(self) -> None:
        self._started = time.perf_counter()

    def stop(self) -> None:
        if self._started is not None:
            self.wall_s += time.perf_counter() - self._started
            self._started = None

    def add_process(self, wall_s: float, timed_s: float) -> None:
        self.processes += 1
        self.processes_s += wall_s
        self.timed_s += timed_s

    def add_gate(self, wall_s: float, count: int = 1) -> None:
        self.gates += count
        self.gates_s += wall_s

    def section(self, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """meta.json's ``overhead``: these seconds added to an earlier session's."""
        before = previous or {}
        total = {
            name: float(before.get(name, 0.0)) + getattr(self, name)
            for name in ("wall_s", "timed_s", "processes_s", "gates_s")
        }
        counts = {name: int(before.get(name, 0)) + getattr(self, name) for name in ("processes", "gates")}
        wall = total["wall_s"]
        fraction = total["timed_s"] / wall if wall > 0 else None
        return {k: round(v, 3) for k, v in total.items()} | counts | {"timed_fraction": fraction}


def overhead_line(section: dict[str, Any]) -> str:
    """One line for the end of a run: the timed share of the wall time and where the rest went."""
    wall, timed = float(section.get("wall_s") or 0.0), float(section.get("timed_s") or 0.0)
    if wall <= 0:
        return "harness: no time recorded"
    inside = float(section.get("processes_s") or 0.0) - timed
    gates = float(section.get("gates_s") or 0.0)
    rest = max(wall - timed - inside - gates, 0.0)
    return (
        f"harness: {timed:.1f} s of {wall:.1f} s wall timed ({timed / wall:.0%}); outside: "
        f"{gates:.1f} s correctness gates ({section.get('gates', 0)}), {inside:.1f} s worker start, "
        f"set-up and warm-up ({section.get('processes', 0)} processes), {rest:.1f} s in the runner"
    )
