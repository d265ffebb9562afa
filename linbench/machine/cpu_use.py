"""How much of the CPU other processes leave free, from /proc/stat.

An OpenMP pool waits at every barrier for its slowest thread. When another threaded process
shares the cores, a descheduled thread holds up all the others, and an impl made of many
small ops measures the scheduler instead of itself: on a 2-core machine shared with another
2-thread torch process, cosine:chunked fwd at 2k took 700 ms with torch's two threads against
12 ms with one thread at the same moment. A plain busy loop beside it does not do that; a
second pool does. So a CPU worker takes only the cores that are idle, and a point measured
while other processes took the cores its threads needed is marked.

Everything here is a pure function of /proc/stat readings (``CpuTimes``) and of CPU seconds,
so the rules can be checked on made-up samples:

* ``idle_cores``: the cores free between two readings, counting linbench's own CPU time as
  free (what linbench uses, it can use again);
* ``threads_for``: one thread per idle core (a core counts when ``IDLE_CORE_SHARE`` of it was
  free), at least one, at most torch's default;
* ``neighbour_cores``: the cores other processes used between two readings: the machine's
  busy time less this process's own CPU time, less a tick per CPU of rounding;
* ``oversubscribed``: whether those neighbours and this process's threads wanted more cores
  than there are, by more than ``OVERSUBSCRIBED_MARGIN``.

Only the CPUs this process may run on (its affinity) are counted: in a container /proc/stat
lists the host's.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

# A core counts as idle when at least this share of it was free.
IDLE_CORE_SHARE = 0.8
# Neighbours may take this share of a core beyond the cores a worker's threads left them
# before its point is marked oversubscribed.
OVERSUBSCRIBED_MARGIN = 0.25
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTimes:
    """One reading of /proc/stat: each CPU's busy and idle clock ticks, by CPU number."""

    busy: dict[int, int]  # user, nice, system, irq, softirq, steal
    idle: dict[int, int]  # idle, iowait

    def totals(self, cpus: Iterable[int] | None = None) -> tuple[int, int]:
        """Busy and idle ticks summed over ``cpus`` (None: every CPU listed)."""
        chosen = list(self.busy) if cpus is None else [c for c in cpus if c in self.busy]
        return sum(self.busy[c] for c in chosen), sum(self.idle[c] for c in chosen)


def parse_proc_stat(text: str) -> CpuTimes:
    """The per-CPU lines (``cpu0 ...``) of /proc/stat; ValueError when it has none."""
    busy: dict[int, int] = {}
    idle: dict[int, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or not name[3:].isdigit():
            continue
        ticks = [int(x) for x in rest.split()]
        ticks += [0] * (8 - len(ticks))
        user, nice, system, idle_ticks, iowait, irq, softirq, steal = ticks[:8]
        cpu = int(name[3:])
        # guest time is already inside user; steal is a core the hypervisor gave elsewhere.
        busy[cpu] = user + nice + system + irq + softirq + steal
        idle[cpu] = idle_ticks + iowait
    if not busy:
        raise ValueError("/proc/stat lists no CPU")
    return CpuTimes(busy, idle)


def read_cpu_times(path: Path = PROC_STAT) -> CpuTimes | None:
    """/proc/stat now; None where there is none (not Linux) or it cannot be read."""
    try:
        return parse_proc_stat(path.read_text())
    except (OSError, ValueError):
        return None


def usable_cpus() -> list[int]:
    """The CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def idle_cores(before: CpuTimes, after: CpuTimes, own_ticks: int, cpus: list[int]) -> float | None:
    """Cores of ``cpus`` free for linbench between two readings: their idle time plus
    ``own_ticks`` (linbench's own CPU time over the window), as a share of the window, in
    cores. None when the readings span no time."""
    busy_0, idle_0 = before.totals(cpus)
    busy_1, idle_1 = after.totals(cpus)
    total = (busy_1 - busy_0) + (idle_1 - idle_0)
    if total <= 0:
        return None
    free = (idle_1 - idle_0) + max(own_ticks, 0)
    cores = len([c for c in cpus if c in after.busy])
    return min(float(cores), max(0.0, cores * free / total))


def idle_core_count(idle: float) -> int:
    """Whole idle cores in ``idle`` cores' worth of free time: a core counts when at least
    IDLE_CORE_SHARE of it was free."""
    return math.floor(idle + (1.0 - IDLE_CORE_SHARE) + 1e-9)


def threads_for(idle: float | None, cores: int, most: int) -> int:
    """Threads for a worker when ``idle`` of ``cores`` cores are free: one per idle core, at
    least one, at most ``most`` (torch's default). All ``most`` when nothing was measured."""
    if idle is None:
        return max(1, most)
    return max(1, min(most, cores, idle_core_count(idle)))


def neighbour_cores(
    before: CpuTimes, after: CpuTimes, own_cpu_s: float, wall_s: float, cpus: list[int]
) -> float | None:
    """Cores that processes other than this one used between two readings ``wall_s`` apart,
    this process having used ``own_cpu_s`` of CPU meanwhile. /proc/stat counts whole ticks, so
    each CPU may be a tick off: that much is given to the benefit of the doubt (never below 0).
    None for a window of no time."""
    if wall_s <= 0:
        return None
    busy_0, _ = before.totals(cpus)
    busy_1, _ = after.totals(cpus)
    others_s = (busy_1 - busy_0) / CLOCK_TICKS - own_cpu_s
    rounding_s = len(cpus) / CLOCK_TICKS
    return max(0.0, (others_s - rounding_s) / wall_s)


def oversubscribed(neighbours: float | None, threads: int, cores: int) -> bool:
    """Whether neighbours using ``neighbours`` cores left a worker's ``threads`` short of cores:
    together they wanted more than ``cores`` by over OVERSUBSCRIBED_MARGIN of a core."""
    if neighbours is None:
        return False
    return neighbours + threads > cores + OVERSUBSCRIBED_MARGIN


class NeighbourWindow:
    """Context manager: ``cores``, the cores other processes used while the block ran (None
    without /proc/stat), from /proc/stat's busy time less this process's CPU time (every
    thread of it: time.process_time)."""

    def __init__(self) -> None:
        self.cpus = usable_cpus()
        self.cores: float | None = None
        self._start: tuple[CpuTimes | None, float, float] | None = None

    def __enter__(self) -> NeighbourWindow:
        self._start = (read_cpu_times(), time.process_time(), time.perf_counter())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        after, own, now = read_cpu_times(), time.process_time(), time.perf_counter()
        if self._start is None:
            return
        before, own_0, then = self._start
        if before is not None and after is not None:
            self.cores = neighbour_cores(before, after, own - own_0, now - then, self.cpus)

    def oversubscribed(self, threads: int) -> bool:
        return oversubscribed(self.cores, threads, len(self.cpus))
