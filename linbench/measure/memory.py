"""Peak resident memory of a region of code on Linux, above what was held before it."""

from __future__ import annotations

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
