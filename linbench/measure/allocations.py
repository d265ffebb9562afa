"""Peak of the live bytes a call allocates through torch on the CPU, from torch's own accounting.

Peak RSS (memory.py) counts pages: what malloc's arenas kept from earlier frees, the kernel's
reclaim and the process's whole history move it, so one point read 129, 29 and 35 MiB in three
runs. torch's profiler, with ``profile_memory=True``, receives every allocation and free its
CPU allocator makes, with its size (the profiler's ``[memory]`` events, positive for an
allocation and negative for a free). Summed in time order they give the bytes the call held at
each moment; their largest sum is the call's peak above what was live before it (a free of a
tensor made before the call is not reported: torch only knows the sizes of what it saw
allocated). The same code, shape and thread count allocate the same sizes in the same order,
so the figure is the same in every process, alone or after other points.

What it does not count: memory a library allocates outside torch's allocator (oneDNN's and
MKL's scratch buffers, Python objects).

What the profiler costs the call it records: a fixed time and a time per event it records (an op,
an allocation, a free). A loop of many small ops is slowed several times (cosine:recurrent at
512 tokens: 13.5 → 23.7 ms of CPU time, 17,974 events); a call of a few large ops is not slowed
measurably (softmax:sdpa at 4k: 27 events in 240 ms). So the profiled call is timed, with the
clocks the timing loop reads, between the profiler's start and stop, and ``ProfiledCall.timeable``
says whether its time may be a repetition like any other: when the profiler's cost, bounded from
above by the constants below, is under NEGLIGIBLE_PROFILER_SHARE of the call's time
(docs/measurement.md, "The profiled call as a repetition").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from torch.autograd import DeviceType
from torch.autograd.profiler import profile

from linbench.measure.timer import CpuClock

# The name torch's profiler gives an allocation or free (torch.autograd.profiler's MEMORY_EVENT_NAME).
MEMORY_EVENT = "[memory]"

# Upper bounds of what the profiler adds to the call it records, from calls profiled and not on
# the 2-core development machine (torch 2.13, docs/measurement.md): per recorded event 0.14 µs
# (a loop of tiny adds) to 1.4 µs (cosine:recurrent, one thread) and 4.4 µs of wall time
# (cosine:recurrent, two threads on a loaded machine), taken as 10 µs; per call 10–16 µs (one
# tiny op profiled), taken as 50 µs.
PROFILER_EVENT_COST_MS = 0.010
PROFILER_CALL_COST_MS = 0.050
# The share of a call's time under which that bound leaves its time a fair repetition: far below
# the spread of a CPU point's repetitions (several per cent on a shared machine).
NEGLIGIBLE_PROFILER_SHARE = 0.005


@dataclass(frozen=True)
class ProfiledCall:
    """One call recorded by torch's profiler: its allocation peak, how many events the profiler
    recorded (ops and memory events), and its time on the timing loop's clocks (ms)."""

    peak_bytes: int
    events: int
    wall_ms: float
    cpu_ms: float

    @property
    def profiler_cost_ms(self) -> float:
        """The most the profiler can have added to the call's time (the constants above)."""
        return PROFILER_CALL_COST_MS + self.events * PROFILER_EVENT_COST_MS

    @property
    def timeable(self) -> bool:
        """Whether the call's time is a repetition like any other: the profiler's cost is under
        NEGLIGIBLE_PROFILER_SHARE of the shorter of its two clocks' readings."""
        return self.profiler_cost_ms < NEGLIGIBLE_PROFILER_SHARE * min(self.wall_ms, self.cpu_ms)


def profiled_call(call: Callable[[], object]) -> ProfiledCall:
    """``call`` run once under torch's profiler, timed between the profiler's start and stop
    (so neither is in its time): what it allocated (module doc), its events and its time."""
    with profile(use_cpu=True, profile_memory=True) as prof:
        wall_ms, cpu_ms, _ = CpuClock().around(call)
    results = prof.kineto_results
    if results is None:
        raise RuntimeError("torch's profiler returned no events")
    events = list(results.events())
    return ProfiledCall(peak_of_events(events), len(events), wall_ms, cpu_ms)


def allocated_peak_bytes(call: Callable[[], object]) -> int:
    """The peak of the live bytes ``call`` allocated through torch on the CPU (module doc)."""
    return profiled_call(call).peak_bytes


def peak_of_events(events: Iterable[Any]) -> int:
    """The largest running sum of the CPU memory events' sizes, in time order (0 at least).

    The sort is stable, so events of one moment keep the order the profiler recorded them in.
    """
    changes = [e for e in events if e.name() == MEMORY_EVENT and e.device_type() == DeviceType.CPU]
    live = peak = 0
    for event in sorted(changes, key=lambda e: e.start_ns()):
        live += event.nbytes()
        peak = max(peak, live)
    return peak
