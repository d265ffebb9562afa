"""meta.json: what ran, on what, with which software — everything a reader needs to trust
or compare a results folder."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch


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
    return f"{sha}-dirty" if dirty else sha


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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


def collect_meta(argv: list[str], device: torch.device) -> dict[str, Any]:
    """The run's provenance, recorded before the first point."""
    from linbench import __version__

    return {
        "command": shlex.join(["linbench", *argv]),
        "linbench_version": __version__,
        "git_sha": git_sha(),
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "hostname": platform.node(),
        **device_info(device),
        **optional_library_versions(),
    }


def optional_library_versions() -> dict[str, str]:
    """Versions of the optional libraries some impls run on, where installed (fla-core:
    the ``fla`` impls)."""
    from linbench.variants.linear_forms.fla import fla_version

    version = fla_version()
    return {"fla_core": version} if version is not None else {}


@dataclass(frozen=True)
class SweepRecord:
    """meta.json's ``sweep`` section: the sweep a run folder holds, as merged settings and
    tables (enough to plan it again for --resume), with its impls, baselines and point count.
    This is its one writer (``section``) and its one reader (``read``)."""

    command: str  # "run" or "decode"
    name: str
    suite: str | None
    settings: dict[str, Any]  # every key but the [[sweep]] tables, defaults filled in
    tables: list[dict[str, Any]]  # the suite's [[sweep]] tables, as given
    impls: list[str]  # "variant:impl", baselines included
    baselines: list[str]
    points: int

    def section(self) -> dict[str, Any]:
        """The section as meta.json holds it."""
        return asdict(self)

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> SweepRecord | None:
        """The sweep ``meta`` records; None when it records none that could be planned again (a
        folder not made by run or decode, or a damaged meta.json). A run from before
        ``command`` was recorded is a ``run``."""
        recorded = meta.get("sweep")
        try:
            record = cls(
                command=str(recorded.get("command", "run")),
                name=str(recorded["name"]),
                suite=recorded.get("suite"),
                settings=recorded["settings"],
                tables=recorded["tables"],
                impls=list(recorded.get("impls", [])),
                baselines=list(recorded.get("baselines", [])),
                points=int(recorded.get("points", 0)),
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        return record if isinstance(record.settings, dict) and isinstance(record.tables, list) else None
