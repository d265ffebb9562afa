"""How many torch threads a CPU worker runs with, and why.

By default a CPU worker uses only the cores that are idle when the run starts (at least one):
idle capacity is measured from /proc/stat over a short window before the first point, with
linbench's own processes counted as idle (linbench/machine/cpu_use.py says why a second
thread pool on busy cores wrecks a measurement). The choice is checked again with every load
sample between points (every few seconds at most), and follows the idle cores down or up.
``--threads`` sets the count by hand, and then nothing changes it. meta.json's ``timing``
records the choice (``threads_choice``), every row its ``threads``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from linbench.machine.cpu_use import IDLE_CORE_SHARE, idle_cores, read_cpu_times, threads_for, usable_cpus
from linbench.machine.load import own_ticks, read_processes

BY_HAND = "--threads"
BY_IDLE = "idle cores"


@dataclass(frozen=True)
class ThreadsChoice:
    """The torch threads of a CPU worker: ``threads``, chosen ``by`` hand or by the idle cores
    (``idle_cores`` of ``cores`` were free over ``window_s``; ``most`` is torch's default)."""

    threads: int
    by: str  # BY_HAND or BY_IDLE
    cores: int
    most: int
    idle_cores: float | None = None
    window_s: float | None = None

    def section(self) -> dict[str, Any]:
        """meta.json's ``timing.threads_choice``."""
        rule = f"one thread per core at least {IDLE_CORE_SHARE:.0%} idle, at least one, at most torch's default"
        return asdict(self) | ({"rule": rule} if self.by == BY_IDLE else {})

    def with_idle(self, idle: float | None) -> ThreadsChoice:
        """The choice again from ``idle`` cores measured later; a choice by hand stays."""
        if self.by == BY_HAND or idle is None:
            return self
        threads = threads_for(idle, self.cores, self.most)
        return ThreadsChoice(threads, BY_IDLE, self.cores, self.most, round(idle, 2), None)


def initial_choice(by_hand: int | None, most: int, idle: float | None, window_s: float) -> ThreadsChoice:
    """``by_hand`` when given; else one thread per core of ``idle`` (measured over ``window_s``)."""
    cores = len(usable_cpus())
    if by_hand is not None:
        return ThreadsChoice(by_hand, BY_HAND, cores, most)
    return ThreadsChoice(threads_for(idle, cores, most), BY_IDLE, cores, most, _round(idle), window_s)


def measure_idle_cores(window_s: float, cpus: list[int] | None = None) -> float | None:
    """Cores idle (or used by linbench) over the next ``window_s``; None without /proc/stat."""
    cpus = usable_cpus() if cpus is None else cpus
    before, table = read_cpu_times(), read_processes()
    time.sleep(window_s)
    after, later = read_cpu_times(), read_processes()
    if before is None or after is None:
        return None
    return idle_cores(before, after, own_ticks(later) - own_ticks(table), cpus)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
