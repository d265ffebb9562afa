"""Human-readable times, byte counts and sizes, shared by the run display and the reports."""

from __future__ import annotations

import math
from typing import Any

from linbench.sweep.ranges import format_size

__all__ = ["format_bytes", "format_ms", "format_size", "is_missing"]


def is_missing(value: Any) -> bool:
    """True for an empty CSV cell, None or NaN (how pandas reads an empty number)."""
    if value is None or value == "":
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def format_bytes(value: Any) -> str:
    """1.5 MiB, 16.0 GiB; '-' when there is no reading."""
    if is_missing(value):
        return "-"
    size = float(value)
    sign = "-" if size < 0 else ""
    size = abs(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{sign}{size:.0f} {unit}" if unit == "B" else f"{sign}{size:.1f} {unit}"
        size /= 1024
    return f"{sign}{size:.1f} GiB"  # unreachable: GiB ends the loop


def format_ms(value: Any) -> str:
    """0.306 ms, 42.7 ms, 1.93 s; '-' when there is no time."""
    if is_missing(value):
        return "-"
    ms = float(value)
    return f"{ms / 1000:.3g} s" if ms >= 1000 else f"{ms:.3g} ms"
