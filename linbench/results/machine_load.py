"""One line about how busy the machine was during a run, from meta.json's ``load`` section.

``linbench run`` and ``decode`` print it under their summary; ``report`` and ``compare``
can print it for each run they read (it imports nothing heavy: no torch, no pandas).
The samples and the rule are written by linbench/machine/load.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Processes named in the line, busiest first.
NAMED = 3


def load_warning(meta: Mapping[str, Any]) -> str | None:
    """``the machine was busy during this run (...)`` when any sample of ``meta["load"]``
    found it busy; None when none did or the run recorded no load."""
    section = meta.get("load")
    if not isinstance(section, Mapping):
        return None
    samples = [s for s in section.get("samples") or [] if isinstance(s, Mapping)]
    busy = [s for s in samples if s.get("busy")]
    if not busy:
        return None
    parts = []
    loads = [float(s["load_avg"][0]) for s in busy if s.get("load_avg")]
    if loads:
        parts.append(f"load average up to {max(loads):.1f} on {section.get('cores', '?')} cores")
    peaks: dict[tuple[Any, Any], float] = {}
    for sample in busy:
        for process in sample.get("busy_processes") or []:
            key = (process.get("name"), process.get("pid"))
            peaks[key] = max(peaks.get(key, 0.0), float(process.get("cpu_percent") or 0.0))
    named = sorted(peaks.items(), key=lambda item: -item[1])[:NAMED]
    parts += [f"{name} (pid {pid}) up to {percent:.0f}% CPU" for (name, pid), percent in named]
    gpu = {(p.get("name"), p.get("pid")) for s in busy for p in s.get("gpu_processes") or []}
    parts += [f"{name} (pid {pid}) on the GPU" for name, pid in sorted(gpu, key=str)[:NAMED]]
    detail = "; ".join(parts) or "see meta.json"
    return (
        f"the machine was busy during this run ({len(busy)} of {len(samples)} load samples: {detail}); "
        "its times may be slower than on an idle machine"
    )
