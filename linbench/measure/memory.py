"""Peak resident memory of a region of code on Linux, above what was held before it."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field} field")


def rss_bytes() -> int:
    """Resident set size now."""
    return _status_bytes("VmRSS")


def reset_peak_rss() -> None:
    """Reset the kernel's high-water mark (VmHWM) to the current RSS.

    Writing "5" to /proc/self/clear_refs does this (Linux ≥ 4.0); without it a peak
    would include whatever ran earlier in the process.
    """
    _CLEAR_REFS.write_text("5")


def release_free_heap() -> bool:
    """Hand memory that malloc keeps after frees back to the kernel (glibc's malloc_trim).

    Freed blocks below glibc's mmap threshold (up to 32 MiB) stay resident in the heap, and a
    later allocation reuses them without raising RSS: a small region measured after a large
    set-up would read as using nothing. Trimming first makes its new pages count. True when
    memory was given back; False when none was, or where there is no glibc.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):
        return False


@dataclass
class PeakRSS:
    """Context manager: ``peak_bytes`` is the peak RSS inside the block minus RSS before it.

    The figure counts pages the block touched that were not resident before, so run each
    measured point in a fresh process when it must not depend on what ran earlier (freed
    memory kept by the allocator would otherwise be reused and not counted).
    """

    baseline_bytes: int = 0
    peak_bytes: int = 0

    def __enter__(self) -> PeakRSS:
        reset_peak_rss()
        self.baseline_bytes = rss_bytes()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.peak_bytes = max(0, _status_bytes("VmHWM") - self.baseline_bytes)
