"""One side's rounds merged into one run folder whose processes are the rounds.

Each round is a ``linbench run`` that measured every point in one fresh process, so round r
gives each point its process r - 1: processes.csv gets one row per round per point (from that
round's results.csv row, with the worker's pid and times from its processes.csv where the
revision writes one), samples.csv every round's repetitions under their process, and
results.csv the same summary ``linbench run --processes K`` writes (the median of the process
medians and the spread between them; linbench/results/processes.py). A point that failed in
any round takes that round's failure: a flaky impl is a broken one. The result is a run folder
like any other: ``linbench compare``, ``report`` and ``plot`` read it.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from linbench.results.processes import summarise
from linbench.results.rates import rate_columns
from linbench.results.schema import DECODE_MODE, KEY_COLUMNS, MEASURED_COLUMNS, SCHEMA_VERSION
from linbench.results.store import SAMPLES_FILE, RunStore

Key = tuple[str, ...]
Row = Mapping[str, Any]
# A point's own columns: what it is, not what one process measured (the same in every round).
POINT_COLUMNS = (*KEY_COLUMNS, "device_name", "params", "flops", "context")
# Measured once per point, by its correctness gate (round 1's stand for the point).
GATE_COLUMNS = ("rel_err", "check_seq")
# A worker's own figures, from the round's processes.csv (absent in older revisions).
WORKER_COLUMNS = ("pid", "wall_s", "timed_s")
# The figures of meta.json's ``overhead`` that add up over rounds.
SUMMED_OVERHEAD = ("wall_s", "timed_s", "processes_s", "gates_s", "processes", "gates")


def merge_rounds(rounds: Sequence[Path], dest: Path, meta: Mapping[str, Any]) -> RunStore:
    """Merge the run folders ``rounds`` (round 1 first) into a new run folder ``dest``, its
    meta.json round 1's with ``meta``'s sections laid over it."""
    if not rounds:
        raise ValueError("nothing to merge: no rounds")
    store = RunStore.create_at(dest)
    stores = [RunStore(path) for path in rounds]
    by_round = [{_key(row): row for row in round_store.rows()} for round_store in stores]
    workers = [{_key(row): row for row in round_store.process_rows()} for round_store in stores]
    samples = [_samples(path) for path in rounds]
    for key in _points(by_round):
        measured = [(index, rows[key]) for index, rows in enumerate(by_round) if key in rows]
        processes = []
        for index, row in measured:
            process = process_row(row, index, workers[index].get(key, {}))
            store.append_process(process, samples[index].get(key, ()))
            processes.append(process)
        store.append(point_row(measured, processes, len(rounds)))
    store.write_meta(merged_meta([round_store.read_meta() for round_store in stores], meta))
    return store


def process_row(result: Row, process: int, worker: Row) -> dict[str, Any]:
    """The processes.csv row of a round's results row: the point, ``process`` (the round
    index, from 0), what the round's one process measured, and the worker's pid and times."""
    row: dict[str, Any] = {column: result[column] for column in KEY_COLUMNS}
    row["process"] = process
    row |= {column: result.get(column) for column in (*MEASURED_COLUMNS, "check_seq")}
    row |= {column: worker.get(column) for column in WORKER_COLUMNS}
    return row


def point_row(measured: Sequence[tuple[int, Row]], processes: Sequence[Row], rounds: int) -> dict[str, Any]:
    """The results row of a point from its rounds' rows (round index, row) and its process
    rows: the first failure if any round failed, else the summary of the processes."""
    first = measured[0][1]
    row: dict[str, Any] = {column: first.get(column) for column in POINT_COLUMNS}
    failed = next(((index, r) for index, r in measured if r.get("status") != "ok"), None)
    if failed is not None:
        return row | failure(*failed, first, rounds) | {"processes": len(processes)}
    row |= summarise(processes) | {column: processes[0].get(column) for column in GATE_COLUMNS}
    shape = (int(first["batch"]), int(first["seq"]))
    flops = float(first["flops"]) if first.get("flops") not in (None, "") else None
    return row | rate_columns(float(row["time_ms"]), flops, *shape, decode=first["mode"] == DECODE_MODE)


def failure(index: int, failed: Row, first: Row, rounds: int) -> dict[str, Any]:
    """A point's failure: what the failing round recorded, its error naming the round when
    there were several."""
    result = {column: failed.get(column) for column in MEASURED_COLUMNS if failed.get(column) not in (None, "")}
    result |= {column: first.get(column) for column in GATE_COLUMNS}
    if rounds > 1:
        result["error"] = f"round {index + 1} of {rounds}: {failed.get('error') or failed['status']}"
    return result


def merged_meta(metas: Sequence[Mapping[str, Any]], sections: Mapping[str, Any]) -> dict[str, Any]:
    """Round 1's meta.json with the machine-load samples of every round (so a busy round is
    seen), the harness's seconds summed over rounds, today's schema version and the last
    round's end, then ``sections`` laid over it."""
    meta = dict(metas[0])
    meta["schema_version"] = SCHEMA_VERSION
    meta["finished_at"] = metas[-1].get("finished_at")
    loads = [m["load"] for m in metas if isinstance(m.get("load"), Mapping)]
    if loads:
        samples = [sample for load in loads for sample in load.get("samples") or []]
        busy = any(load.get("busy") for load in loads)
        meta["load"] = dict(loads[0]) | {"samples": samples, "busy": busy}
    overheads = [m["overhead"] for m in metas if isinstance(m.get("overhead"), Mapping)]
    if overheads:
        total: dict[str, float | int] = {
            name: round(sum(float(o.get(name) or 0) for o in overheads), 3) for name in SUMMED_OVERHEAD
        }
        total |= {name: int(total[name]) for name in ("processes", "gates")}
        wall = total["wall_s"]
        meta["overhead"] = total | {"timed_fraction": total["timed_s"] / wall if wall > 0 else None}
    return meta | dict(sections)


def _points(by_round: Sequence[Mapping[Key, Row]]) -> list[Key]:
    """Every point of every round, in the order the rounds first wrote them."""
    seen: dict[Key, None] = {}
    for rows in by_round:
        seen.update(dict.fromkeys(rows))
    return list(seen)


def _samples(folder: Path) -> dict[Key, list[float]]:
    """A round's timed repetitions by point (a round has one process per point)."""
    path = folder / SAMPLES_FILE
    found: dict[Key, list[float]] = {}
    if not path.is_file():
        return found
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            found.setdefault(_key(row), []).append(float(row["time_ms"]))
    return found


def _key(row: Row) -> Key:
    return tuple(str(row[column]) for column in KEY_COLUMNS)
