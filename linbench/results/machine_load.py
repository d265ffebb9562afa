"""Lines about the machine a run met: how busy it was (meta.json's ``load`` samples), which
points other processes oversubscribed (results.csv's ``oversubscribed``), and whether the
sessions of a resumed run met different loads (``load.sessions``).

``linbench run`` and ``decode`` print them under their summary; ``report`` and ``compare``
print them for each run they read (this imports nothing heavy: no torch, no pandas).
The samples and the rule are written by linbench/machine/load.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from linbench.results.rows import is_set

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


# Points named in a line, in plan order.
NAMED_POINTS = 4
# Sessions whose idle cores at the start differ by this much met different machines.
IDLE_CORES_APART = 0.5


def oversubscribed_note(rows: Iterable[Mapping[Any, Any]]) -> str | None:
    """``2 of 18 points were measured oversubscribed ...`` naming them, when any ok row of
    ``rows`` (results.csv's) is marked; None when none is (or the run predates the mark)."""
    rows = list(rows)
    marked = [r for r in rows if r.get("status") == "ok" and is_set(r.get("oversubscribed"))]
    if not marked:
        return None
    names = [_point_name(r) for r in marked[:NAMED_POINTS]]
    more = f" and {len(marked) - NAMED_POINTS} more" if len(marked) > NAMED_POINTS else ""
    return (
        f"{len(marked)} of {len(rows)} points were measured oversubscribed (other processes took the cores "
        f"their worker's threads needed: {', '.join(names)}{more}); their times are kept in results.csv but "
        "left out of the fastest, speedups, fits, crossovers and the gate"
    )


def sessions_note(meta: Mapping[str, Any]) -> str | None:
    """``this run's points come from 2 sessions under different load: ...`` when the sessions
    of a resumed run (meta.json's ``load.sessions``) met different machines: other threads, a
    busy start against a quiet one, or idle cores IDLE_CORES_APART apart. None otherwise."""
    section = meta.get("load")
    if not isinstance(section, Mapping):
        return None
    sessions = [s for s in section.get("sessions") or [] if isinstance(s, Mapping) and s.get("points")]
    if len(sessions) < 2 or not _loads_differ(sessions):
        return None
    described = "; ".join(_session_words(s) for s in sessions)
    return (
        f"this run's points come from {len(sessions)} sessions under different load ({described}): "
        "compare points across them with care (meta.json's load.sessions)"
    )


def _loads_differ(sessions: list[Mapping[str, Any]]) -> bool:
    threads = {s.get("threads") for s in sessions}
    busy = {bool(s.get("busy")) for s in sessions}
    idle = [float(s["idle_cores"]) for s in sessions if isinstance(s.get("idle_cores"), int | float)]
    apart = bool(idle) and max(idle) - min(idle) >= IDLE_CORES_APART
    return len(threads) > 1 or len(busy) > 1 or apart or any(s.get("threads_changes") for s in sessions)


def _session_words(session: Mapping[str, Any]) -> str:
    """``session 2 at 2026-11-24T05:30:00+00:00: 7 points, 1 thread, 0.9 cores idle, load 3.1, busy``."""
    points = int(session.get("points") or 0)
    parts = [f"{points} point{'s' if points != 1 else ''}"]
    if (threads := session.get("threads")) is not None:
        parts.append(f"{threads} thread{'s' if threads != 1 else ''}")
    if (idle := session.get("idle_cores")) is not None:
        parts.append(f"{idle:g} cores idle")
    load = session.get("load_avg")
    if isinstance(load, list | tuple) and load:
        parts.append(f"load {float(load[0]):.1f}")
    if session.get("busy"):
        parts.append("busy")
    if session.get("oversubscribed"):
        parts.append(f"{session['oversubscribed']} oversubscribed")
    return f"session {session.get('session', '?')} at {session.get('started_at', '?')}: {', '.join(parts)}"


def _point_name(row: Mapping[Any, Any]) -> str:
    return f"{row.get('variant')}:{row.get('impl')} {row.get('mode')} seq {row.get('seq')}"


def run_notes(rows: Iterable[Mapping[Any, Any]], meta: Mapping[str, Any]) -> list[str]:
    """The oversubscribed and sessions lines of a run, those that apply (the busy warning aside)."""
    return [note for note in (oversubscribed_note(rows), sessions_note(meta)) if note]
