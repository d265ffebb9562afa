"""Host-side probes: the clock that times CPU points, peak RSS, and other processes' load.

Linux /proc is read directly; where it is missing the probes say so instead of guessing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class ClockResolution:
    resolution_s: float  # smallest step the clock was seen to take
    read_s: float  # what one read costs


def perf_counter_resolution(samples: int = 2000) -> ClockResolution:
    """The smallest non-zero step of ``time.perf_counter_ns`` between consecutive reads,
    and the cost of a read."""
    steps = []
    start = time.perf_counter_ns()
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        t1 = time.perf_counter_ns()
        while t1 == t0:
            t1 = time.perf_counter_ns()
        steps.append(t1 - t0)
    elapsed = time.perf_counter_ns() - start
    return ClockResolution(min(steps) * 1e-9, elapsed * 1e-9 / (2 * samples))


def _cpu_ticks() -> dict[int, tuple[str, int]]:
    """(name, user + system clock ticks) of every process now."""
    ticks: dict[int, tuple[str, int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # The name sits in parentheses and may itself hold spaces or parentheses.
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks[int(entry.name)] = (name, int(fields[11]) + int(fields[12]))  # utime, stime
    return ticks


@dataclass(frozen=True)
class HostLoad:
    busy_cores: float  # CPU time other processes used per second of the window
    top: list[tuple[str, int, float]]  # (name, pid, cores) of the busiest
    load_average: tuple[float, float, float] | None
    cpu_count: int
    window_s: float


def other_load(window_s: float = 0.5, exclude: set[int] | None = None) -> HostLoad:
    """CPU use of every process but this one (and ``exclude``) over ``window_s`` seconds,
    during which this process sleeps."""
    mine = {os.getpid(), *(exclude or set())}
    hz = os.sysconf("SC_CLK_TCK")
    before = _cpu_ticks()
    t0 = time.perf_counter()
    time.sleep(window_s)
    after = _cpu_ticks()
    elapsed = time.perf_counter() - t0
    cpu_count = os.cpu_count() or 1
    use = []
    for pid, (name, ticks) in after.items():
        if pid in mine or pid not in before:
            continue
        # Ticks are 10 ms: a short window can count more CPU time than there was. No process,
        # nor all of them together, uses more cores than the machine has.
        cores = min((ticks - before[pid][1]) / hz / elapsed, cpu_count)
        if cores > 0:
            use.append((name, pid, cores))
    use.sort(key=lambda item: -item[2])
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return HostLoad(min(sum(c for _, _, c in use), cpu_count), use[:3], load, cpu_count, elapsed)
