"""Where a run's wall time goes: timed repetitions, worker processes, correctness gates.

The harness's own cost is everything outside the timed repetitions (measuring the machine at
the start, process start, imports, the kernel library's load, the fp64 gate, warm-up, memory
placement between repetitions, processes measured again, writing rows). ``linbench run`` prints the
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
    startup_s: float = 0.0  # measuring the machine at the start: idle cores, ceilings
    retried_s: float = 0.0  # inside processes measured again (oversubscribed): none of it kept
    retried: int = 0
    # When the command began (time.monotonic, its process's start): None for a run made by a
    # caller's own process, whose age says nothing of the run.
    command_began: float | None = None
    command_s: float = 0.0
    _started: float | None = None

    def start(self) -> None:
        self._started = time.perf_counter()

    def stop(self) -> None:
        if self._started is not None:
            self.wall_s += time.perf_counter() - self._started
            self._started = None

    def end_command(self) -> None:
        """The command's wall time so far: from its process's start to now (the run's end)."""
        if self.command_began is not None:
            self.command_s = time.monotonic() - self.command_began

    def add_process(self, wall_s: float, timed_s: float) -> None:
        self.processes += 1
        self.processes_s += wall_s
        self.timed_s += timed_s

    def add_gate(self, wall_s: float, count: int = 1) -> None:
        self.gates += count
        self.gates_s += wall_s

    def add_startup(self, wall_s: float) -> None:
        self.startup_s += wall_s

    def add_retried(self, wall_s: float) -> None:
        """A process whose result was dropped to measure it again: its timed repetitions too
        are harness cost, since no row keeps them."""
        self.retried += 1
        self.retried_s += wall_s

    def overhead(self, previous: Overhead | None = None) -> Overhead:
        """meta.json's ``overhead``: these seconds added to an earlier session's."""
        session = Overhead(
            self.wall_s,
            self.timed_s,
            self.processes_s,
            self.gates_s,
            self.processes,
            self.gates,
            self.startup_s,
            self.retried_s,
            self.retried,
            self.command_s,
        )
        return session if previous is None else previous + session


def overhead_line(overhead: Overhead) -> str:
    """One line for the end of a run: the timed share of the wall time and where the rest went."""
    wall, timed = overhead.wall_s, overhead.timed_s
    if wall <= 0:
        return "harness: no time recorded"
    inside = overhead.processes_s - timed
    gates, startup, retried = overhead.gates_s, overhead.startup_s, overhead.retried_s
    rest = max(wall - timed - inside - gates - startup - retried, 0.0)
    again = (
        f", {retried:.1f} s measured again ({overhead.retried} oversubscribed processes)" if overhead.retried else ""
    )
    command = overhead.command_s
    before = (
        f"; {timed / command:.0%} of the command's {command:.1f} s, its start (Python, imports, "
        f"planning) and end included"
        if command > wall
        else ""
    )
    return (
        f"harness: {timed:.1f} s of {wall:.1f} s wall timed ({timed / wall:.0%}); outside: "
        f"{startup:.1f} s measuring the machine, {gates:.1f} s correctness gates ({overhead.gates}), "
        f"{inside:.1f} s worker start, set-up and warm-up ({overhead.processes} processes){again}, "
        f"{rest:.1f} s in the runner{before}"
    )
