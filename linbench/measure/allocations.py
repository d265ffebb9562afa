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
MKL's scratch buffers, Python objects). Profiling slows a call several times, so it runs in a
call of its own, never in a timed one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from torch.autograd import DeviceType
from torch.autograd.profiler import profile

# The name torch's profiler gives an allocation or free (torch.autograd.profiler's MEMORY_EVENT_NAME).
MEMORY_EVENT = "[memory]"


def allocated_peak_bytes(call: Callable[[], object]) -> int:
    """The peak of the live bytes ``call`` allocated through torch on the CPU (module doc)."""
    with profile(use_cpu=True, profile_memory=True) as prof:
        call()
    results = prof.kineto_results
    if results is None:
        raise RuntimeError("torch's profiler returned no events")
    return peak_of_events(results.events())


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
