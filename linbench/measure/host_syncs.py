"""How many times one call makes the host wait for the GPU: its synchronising CUDA operations.

A call that reads a device value on the host (``.item()``, ``.tolist()``, a tensor used as a
Python bool or shape), copies from the host with a blocking copy (``torch.tensor(values,
device="cuda")``, ``.to("cuda")`` of a pageable tensor) or waits on a stream stops the host
until the GPU has finished everything queued before it. Timed back to back, such a call no
longer overlaps its launches with the kernels before it, so its time includes the host's own
time: a kernel library's number with a sync inside is not the kernel's (and no CUDA graph of it
can be captured). The count names that, exactly: for one code, shape and library version it is
the same on every call.

It is read with torch's sync debug mode (``torch.cuda.set_sync_debug_mode("warn")``), which
warns where torch copies with a wait (``memcpy_and_sync``: a value read on the host, a blocking
copy from the host) or waits on a stream (``Stream.synchronize``). Not counted: a device- or
event-level wait (``torch.cuda.synchronize()``, ``Event.synchronize()``), which torch does not
flag, and a library's own driver calls (cuda-python, a C++ extension's). So 0 means no sync
that the mode flags, not none at all; a count above 0 is certain.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

# The words of the warning torch emits at each synchronising operation in "warn" mode.
SYNC_WARNING = "called a synchronizing CUDA operation"


def count_host_syncs(fn: Callable[[], object], device: torch.device) -> int | None:
    """The synchronising CUDA operations of one call of ``fn`` that torch makes; None on a
    device other than CUDA. Raises whatever ``fn`` raises; the debug mode is put back."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    before = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every occurrence, not the first per line
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(before)
    torch.cuda.synchronize(device)
    return sum(SYNC_WARNING in str(warning.message) for warning in caught)
