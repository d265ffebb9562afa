"""The line a figure's title ends with when its run measured on a busy machine.

meta.json's "load" section (written by linbench/machine/load.py) holds samples of the load
average and of other busy processes; ``load_warning`` says whether any found the machine busy.
A title has room for one short line, so it names the worst reading alone: the highest load
average where it passed the core count, else the busiest other process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from linbench.results.machine_load import load_warning


def busy_line(meta: Mapping[str, Any]) -> str | None:
    """``Busy machine (8 of 8 load samples; load average up to 4.6 on 2 cores): times may be
    slow`` for a run that measured on a busy machine; None for a quiet run or one that recorded
    no load."""
    if not load_warning(meta):
        return None
    section = meta["load"]
    samples = [s for s in section.get("samples") or [] if isinstance(s, Mapping)]
    busy = [s for s in samples if s.get("busy")]
    worst = _worst(busy, section.get("cores"))
    return f"Busy machine ({len(busy)} of {len(samples)} load samples; {worst}): times may be slow"


def _worst(busy: list[Mapping[str, Any]], cores: Any) -> str:
    loads = [float(s["load_avg"][0]) for s in busy if s.get("load_avg")]
    if loads and isinstance(cores, (int, float)) and max(loads) > cores:
        return f"load average up to {max(loads):.1f} on {cores} cores"
    processes = [p for s in busy for p in s.get("busy_processes") or [] if isinstance(p, Mapping)]
    if processes:
        top = max(processes, key=lambda p: float(p.get("cpu_percent") or 0.0))
        return f"{top.get('name')} (pid {top.get('pid')}) up to {float(top.get('cpu_percent') or 0):.0f}% CPU"
    gpu = [p for s in busy for p in s.get("gpu_processes") or [] if isinstance(p, Mapping)]
    if gpu:
        return f"{gpu[0].get('name')} (pid {gpu[0].get('pid')}) on the GPU"
    return "see meta.json"  # a sample busy for a reason this line does not know
