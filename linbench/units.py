"""Human-readable times, byte counts and sizes, shared by the run display and the reports.

Sizes go both ways here: ``parse_size`` reads ``1k`` as 1024 (the sweep's range grammar is
built on it) and ``format_size`` writes 1024 back as ``1k``.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    *("SUFFIXES", "SizeError", "as_number", "format_bytes", "format_ms", "format_size", "is_missing", "parse_size"),
]

SUFFIXES = {"k": 1024, "m": 1024 * 1024}
_NUMBER = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<suffix>[kKmM]?)$")


class SizeError(ValueError):
    """A size that does not parse; the message names the offending text."""


def parse_size(text: str) -> int:
    """``1k`` → 1024, ``1.5k`` → 1536, ``3000`` → 3000; positive integers only."""
    text = text.strip()
    match = _NUMBER.match(text)
    if match is None:
        if text.startswith("-") or text.startswith("+"):
            raise SizeError(f"{text!r} is not a positive size")
        raise SizeError(f"{text!r} is not a number (sizes look like 512, 1k, 64k or 1m)")
    unit = SUFFIXES.get(match["suffix"].lower(), 1)
    # Whole numbers stay integers: a float would round 99999999999999999999 to 1e20.
    value = float(match["num"]) * unit if "." in match["num"] else int(match["num"]) * unit
    if value != int(value):
        raise SizeError(f"{text!r} is not a whole number")
    if value <= 0:
        raise SizeError(f"{text!r} is not a positive size")
    return int(value)


def format_size(value: int) -> str:
    """The short form used in labels: 1024 → 1k, 65536 → 64k, 3000 → 3000."""
    for suffix, unit in (("m", SUFFIXES["m"]), ("k", SUFFIXES["k"])):
        if value >= unit and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def as_number(value: Any) -> float | None:
    """A cell as a number: None for an empty cell, None, NaN (how pandas reads an empty number)
    or text that is no number. In-memory rows hold numbers and CSV rows their text; every
    reader of a cell that should be a number goes through here."""
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


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
