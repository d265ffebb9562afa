"""Guards a worker process puts on itself so one point cannot take the machine down."""

from __future__ import annotations

import ctypes
import resource
import signal
import sys
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo: what can be allocated without swapping."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/meminfo has no MemAvailable")


def cap_address_space(extra_bytes: int) -> int:
    """Limit this process's address space to what it maps now plus ``extra_bytes``.

    An allocation past the limit then fails inside the process (torch raises "not enough
    memory"), which the worker reports as ``oom``; without the cap the kernel's OOM killer
    would pick a victim, possibly not this process. Returns the limit set.
    """
    limit = _status_bytes("VmSize") + extra_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (a killed sweep leaves no orphan)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
