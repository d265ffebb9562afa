"""Run folders whose points were measured in several worker processes (processes.csv), the
process medians spread by chosen log offsets, so the gate can be checked against known answers.

Importable from every test folder: tests/conftest.py puts this folder on sys.path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

from synthetic_runs import write_run

from linbench.measure.pace import PACE_WORK
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore

# Log offsets of process medians around a point's time (median 0): a quiet fused kernel whose
# 5 processes agree within 0.4% (σ̂ ≈ 0.15%); a moderately noisy point (σ̂ ≈ 6%), measured in
# 20 processes as the runner extends a point whose first 5 span more than 2%; and a point too
# noisy to judge even in 20 (σ̂ ≈ 22%).
QUIET = (-0.002, -0.001, 0.0, 0.001, 0.002)
MODERATE = tuple(round(0.06 * NormalDist().inv_cdf((n + 0.5) / 20), 6) for n in range(20))
NOISY = tuple(round(0.22 * NormalDist().inv_cdf((n + 0.5) / 20), 6) for n in range(20))

Offsets = Sequence[float] | Callable[[dict[str, Any]], Sequence[float]]


def write_process_run(
    folder: Path,
    rows: list[dict[str, Any]],
    offsets: Offsets = QUIET,
    graph_offsets: Offsets | None = None,
    meta: dict[str, Any] | None = None,
    cpu_offsets: Offsets | None = None,
    paced_offsets: Offsets | None = None,
) -> Path:
    """A run of ``rows`` (results.csv) and their processes: each ok row gets one process per
    offset, its median ``time_ms·e^offset`` (its p20 and p80 the row's times e^offset); a row
    with ``device_ms`` gets that time spread by ``graph_offsets`` (default: ``offsets``) in the
    same processes, and one with ``cpu_ms_p20`` that by ``cpu_offsets`` (default: ``offsets``);
    with ``paced_offsets``, each process of such a row is also paced (measure/pace.py): its
    ``paced_p20`` ten times the row's CPU time, spread by those offsets, against PACE_WORK;
    ``kernels_per_call``, ``host_syncs`` and ``threads`` of a row go to each of its processes. ``meta`` is
    merged into meta.json's sweep settings."""
    path = write_run(folder, rows)
    store = RunStore(path)
    for row in rows:
        if row["status"] == "ok":
            for process in _processes(row, offsets, graph_offsets, cpu_offsets, paced_offsets):
                store.append_process(process)
    if meta:
        meta_path = path / "meta.json"
        data = json.loads(meta_path.read_text())
        data.setdefault("sweep", {}).setdefault("settings", {}).update(meta)
        meta_path.write_text(json.dumps(data))
    return path


def _processes(
    row: dict[str, Any],
    offsets: Offsets,
    graph_offsets: Offsets | None,
    cpu_offsets: Offsets | None,
    paced_offsets: Offsets | None = None,
) -> list[dict[str, Any]]:
    eager = list(offsets(row) if callable(offsets) else offsets)
    graph, cpu = (_offsets(row, other if other is not None else offsets) for other in (graph_offsets, cpu_offsets))
    out = []
    for n, offset in enumerate(eager):
        process = {column: row.get(column) for column in KEY_COLUMNS}
        process.update(process=n, pid=1000 + n, status="ok", time_ms=row["time_ms"] * math.exp(offset))
        for column in ("time_ms_p20", "time_ms_p80"):  # each process's repetitions spread as the row's
            if row.get(column) is not None:
                process[column] = row[column] * math.exp(offset)
        process.update(peak_bytes=row.get("peak_bytes"), kernels_per_call=row.get("kernels_per_call"))
        process["host_syncs"] = row.get("host_syncs")
        process["threads"] = row.get("threads")
        if row.get("device_ms") is not None:
            process["device_ms"] = row["device_ms"] * math.exp(graph[n % len(graph)])
        if row.get("cpu_ms_p20") is not None:
            process["cpu_ms_p20"] = row["cpu_ms_p20"] * math.exp(cpu[n % len(cpu)])
            if paced_offsets is not None:
                paced = _offsets(row, paced_offsets)
                process["paced_p20"] = 10 * row["cpu_ms_p20"] * math.exp(paced[n % len(paced)])
                process["pace_work"] = PACE_WORK
        out.append(process)
    return out


def _offsets(row: dict[str, Any], offsets: Offsets) -> list[float]:
    return list(offsets(row) if callable(offsets) else offsets)


def planted(rows: list[dict[str, Any]], index: int, **factors: float) -> list[dict[str, Any]]:
    """``rows`` with row ``index``'s columns multiplied (time_ms=1.3, peak_bytes=1.1, ...); a
    factor on ``time_ms`` moves its p20, p80 and CPU time with it where they have none of their
    own (a slower call is slower throughout)."""
    out = [dict(row) for row in rows]
    for column, factor in factors.items():
        alongside = ("time_ms_p20", "time_ms_p80", "cpu_ms_p20")
        moved = [column, *(c for c in alongside if column == "time_ms" and c not in factors)]
        for name in moved:
            if out[index].get(name) is not None:
                out[index][name] = out[index][name] * factor
    return out
