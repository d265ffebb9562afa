"""The kernel's CPU list notation (``0-3,8-11``), read and written."""

from __future__ import annotations

from collections.abc import Iterable


def parse_cpulist(text: str) -> tuple[int, ...]:
    """``"0-3,8"`` → (0, 1, 2, 3, 8); empty text → (); ValueError for anything else."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"{text.strip()!r} is not a CPU list (like 0-3,8-11)") from None
        if first < 0 or last < first:
            raise ValueError(f"{text.strip()!r} is not a CPU list (like 0-3,8-11)")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def format_cpulist(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 3, 8) → ``"0-3,8"``."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    start = prev = None
    for cpu in ordered:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    if start is not None:
        runs.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(runs)
