"""How long this process has existed: the start of a command, its interpreter's start and
imports included, which no clock started in Python code can see."""

from __future__ import annotations

import os
from pathlib import Path

# /proc/self/stat's fields after the command name: field 22 (starttime) is the 20th of them.
_STARTTIME_INDEX = 19


def process_age_s() -> float | None:
    """Seconds since this process started, from the kernel's record (/proc, to its clock tick:
    10 ms); None where there is no /proc."""
    try:
        stat = Path("/proc/self/stat").read_text()
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: the fields start after its last ')'.
    started_ticks = int(stat.rsplit(")", 1)[1].split()[_STARTTIME_INDEX])
    return max(uptime_s - started_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
