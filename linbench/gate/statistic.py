"""Which of a process's times the gate judges: the statistic, chosen once for compare and ab.

A wall-clock call on a CPU is preempted: on a busy machine a call loses tens of milliseconds
to another process now and then, and a process's *median* lands on whichever mode most of
its repetitions fell in, so the processes of one point disagree far more than the code does.
The lower part of a process's repetitions is what preemption cannot move: each process's p20
(the 20th percentile of its timed repetitions, processes.csv's ``time_ms_p20``) spreads far
less between processes on a busy CPU (docs/gate.md, "Which time is judged"). So a CPU process
is represented by its p20, and the rule (rule.py) takes the median of those and their spread,
as it took the medians'.

Better still, where a CPU process ran one torch thread and recorded its CPU time (``cpu_ms_p20``:
the p20 of its repetitions' process CPU times, measure/timer.py): preemption adds no CPU time at
all, so the processes of one point stay together on a busy machine, where even their wall-clock
p20s spread once most calls are preempted (calls of 10 ms and more on a loaded 2-core machine,
docs/gate.md). That is the statistic then ("cpu time"). It is not taken with several threads: a
pool's threads spin while they wait for a preempted sibling, and that spinning is CPU time. What
it cannot see is a call that waits without working (sleeping, blocked on a lock or on I/O); an
attention impl on a CPU computes, and the wall-clock columns stay in the results beside it.

Better again, where every such process also recorded its pace (``paced_p20``: the p20 of its
calls' CPU times each divided by a fixed reference call's timed beside it, measure/pace.py): a
virtual core runs slow and fast phases of a second or so that move CPU time as much as the wall
clock, and the reference, in the same phase, divides them out (on the 2-core KVM machine of
docs/gate.md, the 38 points the gate suite then had spread σ̂ 0.128 between processes in CPU time and 0.056
paced, medians over the points). That is the statistic then ("paced cpu time"), where both sides
paced every process with the same reference work; the figure is in reference calls, not
milliseconds, so a comparison shows the CPU times beside its ratio. It helps least where a
call's work is least like the reference's (softmax:sdpa and the csrc linear kernel at 512
tokens spread as much paced as not there, or more).

GPU times keep the median. CUDA-graph replay times (``device_ms``) are timed on the device's
clock, a replay is not preempted by the host's scheduler, and processes.csv records no p20 of
them. An eager GPU time is the host issuing launches; on the one GPU pair measured, its p20
moved between runs a little more than its median did (docs/gate.md), so nothing supports
changing it. A CPU run that recorded no p20 (one made before the column, or a results row
without processes.csv and its p20) is judged on the medians it has, and the comparison says
so (``fell_back``).
"""

from __future__ import annotations

from collections.abc import Sequence

from linbench.results.processes import ProcessResult, paced_alike, timed_on_cpu_clock
from linbench.units import as_number

PACED = "paced cpu time"  # each one-thread CPU process's p20 of its calls' CPU times over the reference's
CPU_TIME = "cpu time"  # each one-thread CPU process's p20 of its calls' CPU times: preemption adds none
P20 = "p20"  # each CPU process's 20th percentile of its timed repetitions: what preemption cannot move
MEDIAN = "median"  # each process's median: eager GPU times, and CPU times where a side recorded no p20
GRAPH = "graph median"  # each process's median CUDA-graph replay time (device_ms)

COLUMN = {PACED: "paced_p20", CPU_TIME: "cpu_ms_p20", P20: "time_ms_p20", MEDIAN: "time_ms", GRAPH: "device_ms"}
# What a comparison shows in milliseconds for a statistic whose figure is not a time.
SHOWN_COLUMN = COLUMN | {PACED: COLUMN[CPU_TIME]}


def chosen(cpu: bool, graph: bool, p20: bool, cpu_time: bool = False, paced: bool = False) -> str:
    """The statistic of a point on a CPU (``cpu``) or a GPU whose sides all have CUDA-graph
    replay times (``graph``), all paced CPU times (``paced``), all CPU times of one-thread
    processes (``cpu_time``) or all p20s (``p20``): graph replays first, then on a CPU the
    paced CPU time, then the CPU time, then the p20, else the median."""
    if graph:
        return GRAPH
    if cpu and cpu_time and paced:
        return PACED
    if cpu and cpu_time:
        return CPU_TIME
    return P20 if cpu and p20 else MEDIAN


def fell_back(cpu: bool, statistic: str) -> bool:
    """Whether a point was judged on medians only because a side recorded no p20."""
    return cpu and statistic == MEDIAN


def all_positive(values: Sequence[object]) -> bool:
    """Whether there are values and every one is a number above 0."""
    numbers = [as_number(v) for v in values]
    return bool(numbers) and all(n is not None and n > 0 for n in numbers)


def process_times(
    base: Sequence[ProcessResult], cur: Sequence[ProcessResult], cpu: bool
) -> tuple[str, list[float], list[float]]:
    """The statistic two sides' ``processes`` of a point (on a CPU: ``cpu``) are judged on,
    chosen for both at once (a statistic one side lacks is not taken), and each side's values
    of it: what ``linbench ab`` asks for another round on."""
    both = [*base, *cur]
    graph = all_positive([p.device_ms for p in both])
    cpu_time = bool(base) and bool(cur) and all(timed_on_cpu_clock(p) for p in both)
    statistic = chosen(cpu, graph, all_positive([p.time_ms_p20 for p in both]), cpu_time, paced_alike(both))
    return statistic, _values(base, statistic), _values(cur, statistic)


def _values(processes: Sequence[ProcessResult], statistic: str) -> list[float]:
    values = [as_number(getattr(p, COLUMN[statistic])) for p in processes]
    return [float(v) for v in values if v is not None and v > 0]
