"""One side's rounds merged into one run folder whose processes are the rounds.

Each round is a ``linbench run`` that measured its points in fresh processes, one a point in the
rounds every point gets, so round r gives each point its process r - 1: processes.csv gets one
row per round per point (from that round's results.csv row, with the worker's pid, times and
other columns only processes.csv has from its processes.csv where the revision writes one),
samples.csv every round's repetitions under their process, and
results.csv the same summary ``linbench run --processes K`` writes (the median of the process
medians and the spread between them; linbench/results/processes.py). A point that failed in
any round takes that round's failure: a flaky impl is a broken one. The result is a run folder
like any other: ``linbench compare``, ``report`` and ``plot`` read it.

A later round of a few open points may measure each in several processes (ab/sequential.py:
its start-up then buys more than one). Those processes share the round's run and minutes: on
the 2-core CI machine, points whose calls lean on the caches and memory (softmax:sdpa and
linear:kernel at 256 and 512 tokens) moved together over tens of seconds, the medians of
back-to-back runs of 8 processes spreading 2-3 times what the processes inside each run
predicted (docs/gate.md), so a round's processes are not independent draws. The round stays one
process of the point: its results row (the median of its processes' medians) with each figure
only processes.csv has taken as the median over them (``paced_p20`` among them), their wall
and timed seconds summed, and every repetition of theirs under it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from linbench.results.kinds import row_kind
from linbench.results.meta import LoadSection, Overhead
from linbench.results.processes import PROCESS_FIELDS
from linbench.results.record import (
    Checked,
    Key,
    PointFacts,
    ProcessResult,
    failure_row,
    first_failure,
    point_row,
    process_row,
    row_key,
)
from linbench.results.rows import read_typed
from linbench.results.schema import MEASURED_SCHEMA, RESULT_COLUMNS, SCHEMA_VERSION
from linbench.results.store import SAMPLES_FILE, RunStore
from linbench.units import as_number

Row = Mapping[str, Any]
# What a round's processes.csv row holds and its results row does not: the worker's pid and
# times, and what only a process records (a one-thread CPU process's paced time among them).
WORKER_ONLY = tuple(c for c in PROCESS_FIELDS if c not in RESULT_COLUMNS and c != "process")


def merge_rounds(rounds: Sequence[Path], dest: Path, meta: Mapping[str, Any]) -> RunStore:
    """Merge the run folders ``rounds`` (round 1 first) into a new run folder ``dest``, its
    meta.json round 1's with ``meta``'s sections laid over it."""
    if not rounds:
        raise ValueError("nothing to merge: no rounds")
    store = RunStore.create_at(dest)
    stores = [RunStore(path) for path in rounds]
    by_round = [{row_key(row): row for row in round_store.rows()} for round_store in stores]
    workers = [round_workers(round_store.process_rows()) for round_store in stores]
    samples = [_samples(path) for path in rounds]
    for key in _points(by_round):
        measured = [(index, rows[key]) for index, rows in enumerate(by_round) if key in rows]
        facts = _facts(measured[0][1])
        processes = [round_process(row, index, workers[index].get(key, {})) for index, row in measured]
        for (index, _), process in zip(measured, processes, strict=True):
            store.append_process(process_row(facts, process), samples[index].get(key, ()))
        store.append(merged_row(facts, processes, len(rounds)))
    store.write_meta(merged_meta([round_store.read_meta() for round_store in stores], meta))
    return store


def round_workers(process_rows: Sequence[Row]) -> dict[Key, Row]:
    """A round's processes.csv rows by point: its one row, or, for a point the round measured
    in several processes, one row of them all (round_worker)."""
    found: dict[Key, list[Row]] = {}
    for row in process_rows:
        found.setdefault(row_key(row), []).append(row)
    return {key: rows[0] if len(rows) == 1 else round_worker(rows) for key, rows in found.items()}


def round_worker(rows: Sequence[Row]) -> dict[str, Any]:
    """The columns only processes.csv has, for a round that measured a point in the processes
    ``rows``: the median of each figure over them, the seconds they took summed, the first
    one's pid and what names the work (``pace_work``) where they all agree."""
    merged: dict[str, Any] = {"pid": rows[0].get("pid")}
    for column, combine in (
        ("wall_s", sum),
        ("timed_s", sum),
        ("paced_p20", statistics.median),
        ("pace_ms", statistics.median),
    ):
        numbers = [v for row in rows if (v := as_number(row.get(column))) is not None]
        merged[column] = combine(numbers) if len(numbers) == len(rows) else None
    for column in ("alloc_call_timed", "pace_work"):
        named = {row.get(column) for row in rows}
        merged[column] = named.pop() if len(named) == 1 else None
    return merged


def round_process(result: Row, index: int, worker: Row) -> ProcessResult:
    """The process of a round's results row: what the round's process (or processes) measured,
    as its process ``index`` (the round index, from 0), with the worker's pid and times from the
    round's processes.csv row ``worker`` (round_workers; absent in older revisions), and every
    other column only processes.csv has (a one-thread CPU process's paced time among them)."""
    process = ProcessResult.from_row({**result, **{c: worker.get(c) for c in WORKER_ONLY}})
    return replace(process, process=index)


def merged_row(facts: PointFacts, processes: Sequence[ProcessResult], rounds: int) -> dict[str, Any]:
    """The results row of a point from its rounds' processes (record.py): the first failure
    if any round failed, its error naming the round when there were several, else the
    summary of the processes. Round 1's check stands for the point."""
    first = processes[0]
    checked = Checked(rel_err=first.rel_err, check_seq=first.check_seq)
    failed = first_failure(processes)
    if failed is None:
        return point_row(facts, checked, processes)
    where = f"round {(failed.process or 0) + 1} of {rounds}" if rounds > 1 else None
    return failure_row(facts, failed, checked, processes=len(processes), where=where)


def _facts(first: Row) -> PointFacts:
    """A point's own columns, as its first round recorded them (the same in every round)."""
    return PointFacts.from_row(first, row_kind(str(first["mode"])).rate)


def merged_meta(metas: Sequence[Mapping[str, Any]], sections: Mapping[str, Any]) -> dict[str, Any]:
    """Round 1's meta.json with the machine-load samples of every round (so a busy round is
    seen), the harness's seconds summed over rounds, today's schema version (and the oldest the
    rounds measured under, ``measured_schema_version``) and the last round's end, then
    ``sections`` laid over it."""
    meta = dict(metas[0])
    meta["schema_version"] = SCHEMA_VERSION
    # The file is this schema's, its figures the rounds' linbench's (the baseline's may be older
    # and count less): the gate names what that schema did not count (gate/compare.py).
    recorded = [int(v) for m in metas if isinstance(v := m.get("schema_version"), int)]
    meta[MEASURED_SCHEMA] = min(recorded, default=SCHEMA_VERSION)
    meta["finished_at"] = metas[-1].get("finished_at")
    load = LoadSection.merged(metas)
    if load is not None:
        meta["load"] = load.section()
    overhead = Overhead.summed(metas)
    if overhead is not None:
        meta["overhead"] = overhead.section()
    return meta | dict(sections)


def _points(by_round: Sequence[Mapping[Key, Row]]) -> list[Key]:
    """Every point of every round, in the order the rounds first wrote them."""
    seen: dict[Key, None] = {}
    for rows in by_round:
        seen.update(dict.fromkeys(rows))
    return list(seen)


def _samples(folder: Path) -> dict[Key, list[float]]:
    """A round's timed repetitions by point (all of its processes')."""
    path = folder / SAMPLES_FILE
    found: dict[Key, list[float]] = {}
    if not path.is_file():
        return found
    for row in read_typed(path):  # results/rows.py: a torn or malformed sample is never data
        found.setdefault(row_key(row), []).append(row["time_ms"])
    return found
