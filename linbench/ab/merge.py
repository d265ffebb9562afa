"""One side's rounds merged into one run folder whose processes are the rounds' processes.

Each round is a ``linbench run`` that measured its points in fresh processes: one a point in
the rounds every point gets, so round r gives each point its process r - 1 (from that round's
results.csv row, with the worker's pid, times and other columns only processes.csv has from its
processes.csv where the revision writes one); a later round of a few points may measure each
in several (job.py: a round's start-up then buys more than one process), and each of those
processes.csv rows is a process of the point, numbered on from the rounds before.
processes.csv gets a row per process, samples.csv every process's repetitions under it, and
results.csv the same summary ``linbench run --processes K`` writes (the median of the process
medians and the spread between them; linbench/results/processes.py). A point that failed in
any round takes that round's failure: a flaky impl is a broken one. The result is a run folder
like any other: ``linbench compare``, ``report`` and ``plot`` read it.
"""

from __future__ import annotations

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
from linbench.results.schema import RESULT_COLUMNS, SCHEMA_VERSION
from linbench.results.store import SAMPLES_FILE, RunStore

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
    workers = [round_workers(round_store) for round_store in stores]
    samples = [_samples(path) for path in rounds]
    for key in _points(by_round):
        measured = [(index, rows[key]) for index, rows in enumerate(by_round) if key in rows]
        facts = _facts(measured[0][1])
        processes: list[ProcessResult] = []
        round_of: list[int] = []  # each process's round
        for index, row in measured:
            rows = workers[index].get(key, [])
            for process in round_processes(row, rows, len(processes)):
                # A round of one process a point: all its samples are that process's.
                mine = samples[index].get((key, process.process if len(rows) > 1 else None), ())
                processes.append(replace(process, process=len(processes)))
                round_of.append(index)
                store.append_process(process_row(facts, processes[-1]), mine)
        store.append(merged_row(facts, processes, len(rounds), round_of))
    store.write_meta(merged_meta([round_store.read_meta() for round_store in stores], meta))
    return store


def round_workers(store: RunStore) -> dict[Key, list[Row]]:
    """A round's processes.csv rows by point, in the order its processes ran."""
    found: dict[Key, list[Row]] = {}
    for row in store.process_rows():
        found.setdefault(row_key(row), []).append(row)
    return found


def round_processes(result: Row, workers: Sequence[Row], first: int) -> list[ProcessResult]:
    """The processes of one point in one round, numbered from ``first``: the round's results
    row as its one process (round_process) where the round measured it once, else each of its
    processes.csv rows ``workers`` (a round of several processes a point), as recorded (each
    keeping its own process number, which names its samples)."""
    if len(workers) <= 1:
        return [round_process(result, first, workers[0] if workers else {})]
    return [ProcessResult.from_row({**result, **worker}) for worker in workers]


def round_process(result: Row, index: int, worker: Row) -> ProcessResult:
    """The process of a round's results row: what the round's one process measured, as its
    process ``index`` (the round index, from 0), with the worker's pid and times from the
    round's processes.csv row ``worker`` (absent in older revisions), and every other column
    only processes.csv has (a one-thread CPU process's paced time among them)."""
    process = ProcessResult.from_row({**result, **{c: worker.get(c) for c in WORKER_ONLY}})
    return replace(process, process=index)


def merged_row(
    facts: PointFacts, processes: Sequence[ProcessResult], rounds: int, round_of: Sequence[int]
) -> dict[str, Any]:
    """The results row of a point from its rounds' processes (record.py), ``round_of`` each
    one's round (from 0): the first failure if any round failed, its error naming the round
    when there were several, else the summary of the processes. Round 1's check stands for the
    point."""
    first = processes[0]
    checked = Checked(rel_err=first.rel_err, check_seq=first.check_seq)
    failed = first_failure(processes)
    if failed is None:
        return point_row(facts, checked, processes)
    failed_round = round_of[processes.index(failed)]
    where = f"round {failed_round + 1} of {rounds}" if rounds > 1 else None
    return failure_row(facts, failed, checked, processes=len(processes), where=where)


def _facts(first: Row) -> PointFacts:
    """A point's own columns, as its first round recorded them (the same in every round)."""
    return PointFacts.from_row(first, row_kind(str(first["mode"])).rate)


def merged_meta(metas: Sequence[Mapping[str, Any]], sections: Mapping[str, Any]) -> dict[str, Any]:
    """Round 1's meta.json with the machine-load samples of every round (so a busy round is
    seen), the harness's seconds summed over rounds, today's schema version and the last
    round's end, then ``sections`` laid over it."""
    meta = dict(metas[0])
    meta["schema_version"] = SCHEMA_VERSION
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


def _samples(folder: Path) -> dict[tuple[Key, int | None], list[float]]:
    """A round's timed repetitions by point and process, and by point alone (process None:
    all of them, for a round of one process a point whose revision numbers none)."""
    path = folder / SAMPLES_FILE
    found: dict[tuple[Key, int | None], list[float]] = {}
    if not path.is_file():
        return found
    for row in read_typed(path):  # results/rows.py: a torn or malformed sample is never data
        key = row_key(row)
        found.setdefault((key, row.get("process")), []).append(row["time_ms"])
        found.setdefault((key, None), []).append(row["time_ms"])
    return found
