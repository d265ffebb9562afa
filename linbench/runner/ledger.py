"""Where a run's wall time goes: timed repetitions, worker processes, correctness gates.

The harness's own cost is everything outside the timed repetitions (process start, imports,
the kernel library's load, the fp64 gate, warm-up, writing rows). ``linbench run`` prints the
timed share at the end and meta.json keeps the figures, summed over the sessions of a
resumed run, so a slow harness is measured rather than guessed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from linbench.results.meta import Overhead


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

    def overhead(self, previous: Overhead | None = None) -> Overhead:
        """meta.json's ``overhead``: these seconds added to an earlier session's."""
        session = Overhead(self.wall_s, self.timed_s, self.processes_s, self.gates_s, self.processes, self.gates)
        return session if previous is None else previous + session


def overhead_line(overhead: Overhead) -> str:
    """One line for the end of a run: the timed share of the wall time and where the rest went."""
    wall, timed = overhead.wall_s, overhead.timed_s
    if wall <= 0:
        return "harness: no time recorded"
    inside = overhead.processes_s - timed
    gates = overhead.gates_s
    rest = max(wall - timed - inside - gates, 0.0)
    return (
        f"harness: {timed:.1f} s of {wall:.1f} s wall timed ({timed / wall:.0%}); outside: "
        f"{gates:.1f} s correctness gates ({overhead.gates}), {inside:.1f} s worker start, "
        f"set-up and warm-up ({overhead.processes} processes), {rest:.1f} s in the runner"
    )
