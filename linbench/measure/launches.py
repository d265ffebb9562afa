"""How many operations one call puts on the GPU: kernels, memory copies and memsets.

Each of them is one launch the host issues on a stream, so the count is what a call costs the
host before any GPU time, and for one code, shape, dtype and library version it is the same
on every call and in every process: it can be compared exactly, as memory is. A change that
adds a launch (an extra ``.contiguous()``, a copy, a fill) changes it by one even where a
CUDA graph hides the launch from the time.

The count is read from ``torch.profiler`` with CUDA activity only (CUPTI's record of what ran
on the device). Two known traits of that profiler shape how it is used:

- Kineto leaves CUPTI attached when a session ends, and the process runs 10-20% slower after
  it (pytorch/pytorch#144455): count after everything a process times, never before.
- Each later session in a process can lose the first device records of its trace to a
  timestamp fault (pytorch/pytorch#192021). The session therefore opens with a few marker
  kernels of torch's own (``torch.cuda._sleep``'s ``spin_kernel``) before the call: a lost
  head costs markers, and a trace that lost every marker may have lost some of the call's
  launches too, so it is refused rather than counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

# Marker kernels launched ahead of the call in the same session; see the module docstring.
MARKERS = 4
MARKER_KERNEL = "spin_kernel"
# Device-side records that are not launches: CUPTI's synchronisation records, which kineto
# files with kernels when sync events are switched on (off by default; left out either way).
SYNC_RECORDS = frozenset({"Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync"})


class LaunchCountError(RuntimeError):
    """The profiler's trace cannot be trusted to hold every launch of the call."""


def count_kernel_launches(fn: Callable[[], object], device: torch.device) -> int | None:
    """The kernels, memcpys and memsets one call of ``fn`` puts on the GPU (all devices and
    streams, the autograd engine's backward included); None on a device other than CUDA.
    Raises LaunchCountError when the trace lost its head, and whatever ``fn`` raises."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as session:
        for _ in range(MARKERS):
            torch.cuda._sleep(1)
        torch.cuda.synchronize(device)
        fn()
        torch.cuda.synchronize(device)
    return launches_in(session.events())


def launches_in(events: Iterable[object]) -> int:
    """The launches in a profiler session's events, less the markers that opened it;
    LaunchCountError when every marker is missing (the trace lost its head)."""
    names = [str(getattr(event, "name", "")) for event in events if _is_device_operation(event)]
    markers = sum(MARKER_KERNEL in name for name in names)
    if markers == 0:
        raise LaunchCountError(
            f"the profiler's trace lost its first {MARKERS} records, so it may have lost launches of the call"
        )
    return len(names) - markers


def _is_device_operation(event: object) -> bool:
    """A kernel, memcpy or memset that ran on a GPU: not a host event, a user annotation
    that the profiler mirrors on the GPU's timeline, or a synchronisation record."""
    from torch.autograd import DeviceType

    if getattr(event, "device_type", None) != DeviceType.CUDA or getattr(event, "is_user_annotation", False):
        return False
    return getattr(event, "name", "") not in SYNC_RECORDS
