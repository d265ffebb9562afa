"""What else the machine was doing while a run measured: the load average, the processes
that used the CPU, and on a GPU the other processes on the device.

One busy process on a 2-core machine made points 1.6–2.5× slower, and nothing in the
results said so. A run now samples the machine at its start, between points (every
``SAMPLE_INTERVAL_S`` at most) and at its end, and meta.json keeps every sample.

* **Processes.** The CPU time of every process is read from /proc/<pid>/stat at two moments;
  a process's CPU% is its CPU time between them over the wall time between them (100% is one
  core busy; a multi-threaded process can pass 100%, never 100% times the cores). Every
  sample covers the time since the sample before, so it sees what ran beside the points, and
  at least ``MIN_WINDOW_S``: /proc counts CPU time in clock ticks (10 ms), and three ticks over
  8 ms once read as 367% on a 2-core machine. Nothing waits for that window where it can be
  had otherwise: the start sample's window opens when the command starts
  (``open_start_window``: its imports and planning are linbench's own time, left out like
  the rest of it), and a sample that comes sooner than that after the one before (the end
  sample right after a between-points one) reaches back to the reading before that one,
  overlapping it. Only a sample with no reading that old waits. linbench's own processes
  (this one and its descendants: the fork server and the workers) are left out. A process
  that ended between two samples is not seen.
* **GPU.** The compute processes NVML lists on the device (nvmlDeviceGetComputeRunningProcesses),
  linbench's own left out. In a container NVML may give process ids of another pid namespace
  that /proc here does not show; those are listed as ``not visible``, and because the process
  running linbench holds a CUDA context itself, one of them is taken to be it.
* **The rule** (``BUSY_RULE``): a sample finds the machine busy when the 1-minute load
  average is above the number of cores (more threads wanted a core than there were: with
  linbench's own threads counted, other processes' load was above the cores linbench left
  free), when another process used ``BUSY_PROCESS_PERCENT`` % of a core or more, or when
  another process was on the GPU.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from linbench.machine.cpu_use import CpuTimes, idle_cores, read_cpu_times, usable_cpus

# A process at this share of one core or above makes the machine busy.
BUSY_PROCESS_PERCENT = 50.0
# Processes at this share or above are listed in a sample.
LISTED_PERCENT = 10.0
MAX_LISTED = 8
# The shortest window a sample watches (the first one, before any point runs, chooses a CPU
# worker's threads from its idle cores: linbench/runner/threads.py).
MIN_WINDOW_S = 0.25
# Between points, a sample at most this often.
SAMPLE_INTERVAL_S = 10.0
BUSY_RULE = (
    f"busy when the 1-minute load average is above the core count, another process uses "
    f"{BUSY_PROCESS_PERCENT:g}% of a core or more, or another process is on the GPU"
)

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcStat:
    """One process as /proc/<pid>/stat shows it."""

    pid: int
    ppid: int
    name: str
    cpu_ticks: int  # user + system time, in clock ticks
    # user + system time of its children that ended and were waited for, in clock ticks
    child_ticks: int = 0


def read_processes(proc: Path = Path("/proc")) -> dict[int, ProcStat]:
    """Every process /proc shows, by pid (empty where there is no /proc)."""
    table: dict[int, ProcStat] = {}
    try:
        entries = list(proc.iterdir())
    except OSError:
        return table
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile, or is not ours to read
            continue
        stat = parse_stat(text)
        if stat is not None:
            table[stat.pid] = stat
    return table


def parse_stat(text: str) -> ProcStat | None:
    """A /proc/<pid>/stat line; the name sits in parentheses and may hold spaces and ')'."""
    try:
        head, _, tail = text.rpartition(")")
        pid_text, _, name = head.partition(" (")
        fields = tail.split()
        # fields[0] is the state (stat's field 3): ppid is field 4, utime 14, stime 15,
        # cutime 16 and cstime 17.
        children = int(fields[13]) + int(fields[14]) if len(fields) > 14 else 0
        return ProcStat(int(pid_text), int(fields[1]), name, int(fields[11]) + int(fields[12]), children)
    except (ValueError, IndexError):
        return None


def own_pids(table: dict[int, ProcStat], root: int | None = None) -> set[int]:
    """``root`` (this process) and every process descended from it."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, stack = {root}, [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def busy_processes(
    before: dict[int, ProcStat], after: dict[int, ProcStat], elapsed_s: float, exclude: set[int]
) -> list[dict[str, Any]]:
    """Processes other than ``exclude`` at LISTED_PERCENT or more of a core between two
    readings, busiest first: pid, name, cpu_percent."""
    if elapsed_s <= 0:
        return []
    busy: list[dict[str, Any]] = []
    most = 100.0 * cpu_cores()  # a process cannot use more than every core
    for pid, stat in after.items():
        earlier = before.get(pid)
        if pid in exclude or earlier is None or earlier.name != stat.name:
            continue  # a pid reused meanwhile is another process
        percent = min(100.0 * (stat.cpu_ticks - earlier.cpu_ticks) / _CLOCK_TICKS / elapsed_s, most)
        if percent >= LISTED_PERCENT:
            busy.append({"pid": pid, "name": stat.name, "cpu_percent": round(percent, 1)})
    busy.sort(key=lambda p: -p["cpu_percent"])
    return busy[:MAX_LISTED]


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages (None where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


NOT_VISIBLE = "not visible"


def gpu_processes(device_index: int, table: dict[int, ProcStat], exclude: set[int]) -> list[dict[str, Any]]:
    """Other processes with a context on the CUDA device (pid, name, used_bytes); raises when
    NVML cannot be asked."""
    from linbench.measure.nvml import load_nvml, nvml_handle

    nvml = load_nvml()
    try:
        listed = list(nvml.nvmlDeviceGetComputeRunningProcesses(nvml_handle(nvml, device_index)))
    finally:
        nvml.nvmlShutdown()
    others = []
    for process in listed:
        pid = int(process.pid)
        if pid in exclude:
            continue
        used = getattr(process, "usedGpuMemory", None)
        name = table[pid].name if pid in table else NOT_VISIBLE
        others.append({"pid": pid, "name": name, "used_bytes": int(used) if isinstance(used, int) else None})
    if len(others) == len(listed) and _holds_cuda_context():
        # None of the pids is ours, yet this process holds a context: NVML counts pids of
        # another namespace, and one that /proc here does not show is this process.
        invisible = [p for p in others if p["name"] == NOT_VISIBLE]
        if invisible:
            others.remove(invisible[0])
    return others


def _holds_cuda_context() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def cpu_cores() -> int:
    """The cores the load average is measured against (the whole machine's)."""
    return os.cpu_count() or 1


def own_ticks(table: dict[int, ProcStat], root: int | None = None) -> int:
    """CPU ticks of linbench's own processes so far (``root`` and its descendants), with those
    of their children that ended and were waited for: a worker the fork server reaped between
    two readings still counts as linbench's."""
    return sum(table[pid].cpu_ticks + table[pid].child_ticks for pid in own_pids(table, root) if pid in table)


@dataclass(frozen=True)
class _Reading:
    """The processes and the CPUs' times at one moment."""

    at: float  # time.monotonic()
    table: dict[int, ProcStat]
    cpu: CpuTimes | None

    @classmethod
    def now(cls) -> _Reading:
        return cls(time.monotonic(), read_processes(), read_cpu_times())

    def idle_cores(self, later: _Reading) -> float | None:
        """Cores free for linbench from this reading to ``later``: idle, or used by linbench."""
        if self.cpu is None or later.cpu is None:
            return None
        own = own_ticks(later.table) - own_ticks(self.table)
        return idle_cores(self.cpu, later.cpu, own, usable_cpus())


# The start sample's first reading, taken when the command started (open_start_window).
_start_window: list[_Reading] = []


def open_start_window() -> None:
    """Take the first reading of the next LoadMonitor's start sample now: a command calls it
    as it starts, so the window spans its imports and planning (linbench's own CPU time, left
    out) and the start sample need not wait MIN_WINDOW_S before anything is measured."""
    _start_window[:] = [_Reading.now()]


def _take_start_window() -> _Reading | None:
    """The reading open_start_window took, once (a later monitor in this process opens its own)."""
    return _start_window.pop() if _start_window else None


class LoadMonitor:
    """Samples the machine's load; ``section()`` is meta.json's ``load``."""

    def __init__(
        self,
        gpu_index: int | None = None,
        threads: int | None = None,
        previous: dict[str, Any] | None = None,
        interval_s: float = SAMPLE_INTERVAL_S,
    ) -> None:
        self.gpu_index = gpu_index
        self.threads = threads
        self.interval_s = interval_s
        old = previous.get("samples") if isinstance(previous, dict) else None
        self.samples: list[dict[str, Any]] = list(old) if isinstance(old, list) else []
        self._last: _Reading | None = _take_start_window()
        self._earlier: _Reading | None = None  # the reading before _last

    def sample(self, when: str) -> dict[str, Any]:
        """Read the machine now (``when``: start, during or end) and keep the sample."""
        if self._last is None:  # nothing to compare with yet: start the window now
            self._last = _Reading.now()
        before = self._window_start()
        short_by = MIN_WINDOW_S - (time.monotonic() - before.at)
        if short_by > 0:
            time.sleep(short_by)
        after = _Reading.now()
        self._earlier, self._last = self._last, after
        elapsed = after.at - before.at
        ours = own_pids(after.table)
        sample: dict[str, Any] = {
            "when": when,
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "window_s": round(elapsed, 2),
            "load_avg": load_average(),
            "busy_processes": busy_processes(before.table, after.table, elapsed, ours),
        }
        idle = before.idle_cores(after)
        if idle is not None:
            sample["idle_cores"] = round(idle, 2)
        if self.gpu_index is not None:
            try:
                sample["gpu_processes"] = gpu_processes(self.gpu_index, after.table, ours)
            except Exception as exc:  # no NVML: the CPU figures stand alone
                sample["gpu_error"] = f"{type(exc).__name__}: {exc}"
        sample["busy"] = busy_reasons(sample, cpu_cores())
        self.samples.append(sample)
        return sample

    def _window_start(self) -> _Reading:
        """The last reading, or where that is younger than MIN_WINDOW_S the one before it: the
        window then overlaps the last sample's instead of waiting (or waits less)."""
        assert self._last is not None
        if self._earlier is not None and time.monotonic() - self._last.at < MIN_WINDOW_S:
            return self._earlier
        return self._last

    def due(self) -> bool:
        """Whether a sample between points is due."""
        return self._last is None or time.monotonic() - self._last.at >= self.interval_s

    def section(self) -> dict[str, Any]:
        return {
            "rule": BUSY_RULE,
            "cores": cpu_cores(),
            "linbench_threads": self.threads,
            "busy": any(s.get("busy") for s in self.samples),
            "samples": self.samples,
        }


def busy_reasons(sample: dict[str, Any], cores: int) -> list[str]:
    """Why ``sample`` finds the machine busy under BUSY_RULE (empty: it does not)."""
    reasons = []
    load = sample.get("load_avg")
    if load and load[0] > cores:
        reasons.append(f"load average {load[0]:.2f} on {cores} cores")
    for process in sample.get("busy_processes", []):
        if process["cpu_percent"] >= BUSY_PROCESS_PERCENT:
            reasons.append(f"{process['name']} (pid {process['pid']}) at {process['cpu_percent']:.0f}% CPU")
    for process in sample.get("gpu_processes", []):
        reasons.append(f"{process['name']} (pid {process['pid']}) on the GPU")
    return reasons
