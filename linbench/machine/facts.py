"""What the machine and the checkout are: the commit, the CPU, the device and its memory.

meta.json records them with every run, and ``--resume`` compares them with the machine that
resumes.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import torch

# How git_sha records a checkout with local changes: the commit, then this.
DIRTY = "-dirty"


def git_sha() -> str | None:
    """The commit linbench runs from (``-dirty`` with local changes); None outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}{DIRTY}" if dirty else sha


def git_commit_time() -> str | None:
    """When the commit linbench runs from was made (ISO 8601, the committer's date): what orders
    runs of many commits in ``linbench history``; None outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        return (
            subprocess.run(
                ["git", "-C", str(root), "show", "-s", "--format=%cI", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
                timeout=5,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


def cpuinfo_field(name: str) -> str | None:
    """The value of the first ``name`` line of /proc/cpuinfo ("model name", "flags"); None
    where there is none (not Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except (OSError, IndexError):
        pass
    return None


def cpu_model() -> str:
    return cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_l2_bytes() -> int | None:
    """The L2 cache of one CPU core, from sysfs (None where it is not exposed)."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "2":
                size = (index / "size").read_text().strip()
                unit = {"K": 1024, "M": 1024 * 1024}.get(size[-1:], 1)
                return int(size.rstrip("KM")) * unit
        except (OSError, ValueError):
            return None
    return None


def device_name(device: torch.device) -> str:
    """The name results.csv carries in ``device_name``."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_model()


def device_info(device: torch.device) -> dict[str, Any]:
    """Name, memory and cache sizes of ``device``."""
    info: dict[str, Any] = {"device": str(device), "device_name": device_name(device)}
    if device.type == "cuda":
        from linbench.measure.nvml import driver_version

        props = torch.cuda.get_device_properties(device)
        info |= {
            "device_memory_bytes": props.total_memory,
            "l2_cache_bytes": getattr(props, "L2_cache_size", None),
            "sm_count": props.multi_processor_count,
            "compute_capability": f"{props.major}.{props.minor}",
            "driver_version": driver_version(),
        }
    else:
        info |= {"device_memory_bytes": device_memory_bytes(device), "l2_cache_bytes": cpu_l2_bytes()}
    return info


def device_memory_bytes(device: torch.device) -> int:
    """All the memory ``device`` has: the GPU's memory, or the machine's RAM for the CPU."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
