"""``linbench merge RUN``: the shard attempts of a fleet run, as one ordinary run folder.

The merge reads only RUN/fleet.json and RUN/shards/ (every CSV file through
linbench/results/rows.py, so a row no writer finished is never merged), and writes
RUN/results.csv, processes.csv, samples.csv and meta.json through RunStore, each replaced
whole (written to a temporary file, then renamed), every row checked against its file's
columns. So it is idempotent: run twice, it writes the same bytes; and
it can run while shards are still running (with ``allow_partial``) and again at the end.

Each point gets exactly one row: its shard's chosen chain of attempts decides which
(linbench/fleet/progress.py); rows of other attempts are *superseded* and counted in
meta.json, along with each shard's attempts. Rows follow the plan's order, each with its
``where`` columns (host, GPU, cores, shard, attempt); a point's processes and samples come
from the attempt its row came from.

It refuses, with one line naming what differs:

* anything in RUN/shards/ that is not an attempt folder of the plan's shards (a run copied in,
  a folder renamed by hand), which it would otherwise leave out unread;
* an attempt of another plan (another sweep, or the same folder reused);
* a scenario (what a report compares: every impl and length of one dtype, mode, masking and
  shape) measured on two cards or two GPU models, or rows from a fake inventory mixed with
  real ones, or attempts that ran different software (torch, linbench commit, schema), unless
  ``allow_mixed`` (``linbench merge --allow-mixed``);
* points without a row, unless ``allow_partial``;
* a point the run's results.csv (an earlier merge's) holds that no attempt has a row for now;
* a column this linbench does not write (an attempt of a newer one), unless ``allow_mixed``,
  which leaves it out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linbench.fleet.errors import MergeError
from linbench.fleet.folders import foreign_entries, read_plan
from linbench.fleet.progress import Attempt, chain_rows, chosen_chain, read_attempts, whole_rows
from linbench.fleet.shards import Shard, scenario_of
from linbench.results.record import Key, row_key
from linbench.results.schema import (
    KEY_COLUMNS,
    PROCESS_COLUMNS,
    RESULT_COLUMNS,
    SAMPLE_COLUMNS,
    WHERE_COLUMNS,
    UnknownColumnError,
)
from linbench.results.store import PROCESSES_FILE, RESULTS_FILE, SAMPLES_FILE, RunStore

# meta.json keys that must agree across the attempts of one run (the software that measured).
SOFTWARE = ("schema_version", "torch", "cuda", "git_sha", "linbench_version", "python")
# meta.json keys that belong to one attempt, not to the merged run.
PER_ATTEMPT = ("fleet", "status", "started_at", "finished_at", "load", "overhead")


@dataclass
class Chosen:
    """The row of one point, and the attempt it came from."""

    index: int  # in the plan
    key: Key
    attempt: Attempt
    row: dict[str, str]


@dataclass
class MergeSummary:
    rows: int = 0
    missing: list[Key] = field(default_factory=list)
    superseded: int = 0
    shards: dict[str, list[int]] = field(default_factory=dict)  # shard → the attempts whose rows count


def merge_run(run_dir: Path, *, allow_mixed: bool = False, allow_partial: bool = False) -> MergeSummary:
    """Merge the shard attempts of ``run_dir`` into its top-level files (see the module doc)."""
    shards, digest, settings = read_plan(run_dir)
    _check_no_foreign(run_dir, shards)
    chosen: list[Chosen] = []
    summary = MergeSummary()
    attempts_used: list[Attempt] = []
    damaged: list[str] = []
    attempted: set[Key] = set()  # every point some attempt has a row for, chosen or superseded
    for shard in shards:
        found = read_attempts(run_dir, shard, damaged)
        attempted.update(key for attempt in found for key in attempt.rows)
        _check_plan(found, digest, run_dir)
        rows = chain_rows(chosen_chain(found, shard))
        _check_belongs(rows, shard)
        used = sorted({a.number for a, _ in rows.values()})
        summary.shards[shard.id] = used
        attempts_used += [a for a in found if a.number in used]
        summary.superseded += sum(1 for a in found for key in a.rows if rows.get(key, (None,))[0] is not a)
        for index, key in shard.points:
            if key in rows:
                chosen.append(Chosen(index, key, *rows[key]))
            else:
                summary.missing.append(key)
    if damaged:  # never merged around: its rows would be lost from results.csv without a word
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        raise MergeError(f"{damaged[0]}{more}; repair that attempt or move its folder out of the run, then merge")
    chosen.sort(key=lambda c: c.index)
    summary.rows = len(chosen)
    if summary.missing and not allow_partial:
        raise MergeError(
            f"{len(summary.missing)} of {len(chosen) + len(summary.missing)} points have no row yet "
            f"(shards {', '.join(_shards_of(summary.missing, shards))}); resume the run, or merge with --allow-partial"
        )
    if not allow_mixed:
        _check_unmixed(chosen, settings, attempts_used)
    _check_keeps_merged(run_dir, attempted)
    _write(run_dir, chosen, _meta(attempts_used, digest, summary, allow_mixed), allow_mixed)
    return summary


def _check_keeps_merged(run_dir: Path, attempted: set[Key]) -> None:
    """MergeError when the run's results.csv, as an earlier merge wrote it, holds points no
    shard attempt has a row for now (their attempt folders removed or emptied): replacing it
    would drop those rows, and their processes and samples, without a word. A point an attempt
    still holds is no loss, though another chain's row is chosen now (a shard started over on
    another card, its new attempt partial)."""
    merged = {row_key(row) for row in whole_rows(run_dir / RESULTS_FILE)}
    lost = merged - attempted
    if lost:
        raise MergeError(
            f"{run_dir / RESULTS_FILE} holds {len(lost)} point(s) that no shard attempt has a row for now (their "
            "attempt folders were removed or emptied); merging would drop them: put the attempts back, or move the "
            "run's results.csv aside to merge without them"
        )


def _check_no_foreign(run_dir: Path, shards: Sequence[Shard]) -> None:
    """MergeError naming what RUN/shards/ holds beside this plan's attempt folders: the merge
    reads only those, so anything else would be left out without a word."""
    foreign = foreign_entries(run_dir, shards)
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise MergeError(
            f"{foreign[0].relative_to(run_dir)}{more} is not an attempt of this run's shards "
            "(shards/<shard>/attempt-<n>, as fleet.json plans them); move it out"
        )


def _check_plan(found: Sequence[Attempt], digest: str, run_dir: Path) -> None:
    for attempt in found:
        theirs = attempt.fleet.get("plan_hash")
        if theirs != digest:
            where = attempt.path.relative_to(run_dir)
            raise MergeError(f"{where} belongs to another plan (hash {theirs}, this run's {digest}); move it out")


def _check_belongs(rows: dict[Key, Any], shard: Shard) -> None:
    stray = sorted(set(rows) - set(shard.keys))
    if stray:
        raise MergeError(f"shard {shard.id} holds a row for a point it does not plan: {stray[0]}")


def _shards_of(keys: Iterable[Key], shards: Sequence[Shard]) -> list[str]:
    wanted = set(keys)
    return [s.id for s in shards if wanted & set(s.keys)]


def _check_unmixed(chosen: Sequence[Chosen], settings: dict[str, Any], used: Sequence[Attempt]) -> None:
    """MergeError when a scenario spans two cards or models, or the attempts differ in kind
    of inventory or in software."""
    along = tuple(settings.get("along", ("seq",)))
    fixed_tokens = bool(settings.get("fixed_tokens", False))
    cards: dict[tuple[tuple[str, str], ...], dict[str, set[str]]] = {}
    for c in chosen:
        seen = cards.setdefault(scenario_of(c.key, "scenario", along, fixed_tokens), {"card": set(), "model": set()})
        seen["card"].add(c.attempt.gpu_uuid)
        seen["model"].add(str(c.attempt.fleet.get("gpu_name") or c.row.get("device_name") or ""))
    for scenario, seen in cards.items():
        for what in ("model", "card"):
            if len(seen[what]) > 1:
                label = " ".join(f"{k}={v}" for k, v in scenario)
                names = ", ".join(sorted(seen[what]))
                raise MergeError(
                    f"the scenario {label} was measured on {len(seen[what])} {what}s ({names}); "
                    "its comparisons need one card: run it again on one, or merge with --allow-mixed"
                )
    for key, what in (("inventory", "fake and real GPUs"),):
        values = {str(a.fleet.get(key)) for a in used}
        if len(values) > 1:
            raise MergeError(f"the attempts mix {what} ({', '.join(sorted(values))}); merge only one kind")
    for key in SOFTWARE:
        values = {json.dumps(a.meta.get(key)) for a in used if key in a.meta}
        if len(values) > 1:
            raise MergeError(
                f"the attempts ran different {key} ({', '.join(sorted(values))}); "
                "merge with --allow-mixed to keep them in one run anyway"
            )


def _meta(used: Sequence[Attempt], digest: str, summary: MergeSummary, mixed: bool) -> dict[str, Any]:
    """The merged meta.json: what every attempt agrees on, and the fleet section (which
    attempts count, the devices and hosts, what was superseded or is missing)."""
    ordered = sorted(used, key=lambda a: (str(a.fleet.get("shard")), a.number))
    common: dict[str, Any] = {}
    if ordered:
        first = {k: v for k, v in ordered[0].meta.items() if k not in PER_ATTEMPT}
        common = {k: v for k, v in first.items() if all(a.meta.get(k) == v for a in ordered)}
    devices: dict[str, dict[str, Any]] = {}
    for a in ordered:
        fleet = a.fleet
        device = devices.setdefault(a.gpu_uuid, {k: fleet.get(k) for k in ("host", "gpu_name", "gpu_pci", "gpu_index")})
        if "ceilings" in a.meta:  # measured per device: the run's top-level ones would mix cards
            device.setdefault("ceilings", a.meta["ceilings"])
    starts = [str(a.meta["started_at"]) for a in ordered if a.meta.get("started_at")]
    ends = [str(a.meta["finished_at"]) for a in ordered if a.meta.get("finished_at")]
    return common | {
        "status": "partial" if summary.missing else "complete",
        "started_at": min(starts, default=None),
        "finished_at": max(ends, default=None),
        "fleet": {
            "plan_hash": digest,
            "shards": summary.shards,
            "devices": devices,
            "hosts": sorted({str(d.get("host")) for d in devices.values()}),
            "inventory": sorted({str(a.fleet.get("inventory")) for a in ordered}),
            "rows": summary.rows,
            "missing": len(summary.missing),
            "superseded_rows": summary.superseded,
            "allow_mixed": mixed,
        },
    }


def _write(run_dir: Path, chosen: Sequence[Chosen], meta: dict[str, Any], mixed: bool) -> None:
    """The merged files, through RunStore: each chosen row, and its processes and samples from
    the attempt it came from (each attempt's files read and grouped by point once). A column
    this linbench does not write is refused, or, ``mixed`` (attempts of several versions
    allowed), left out, as the version that merges reads it."""
    grouped: dict[Path, AttemptRows] = {}
    processes: list[dict[str, str]] = []
    samples: list[dict[str, str]] = []
    for c in chosen:
        rows = grouped.get(c.attempt.path) or grouped.setdefault(c.attempt.path, AttemptRows.read(c.attempt.path))
        mine = rows.processes.get(c.key, [])
        processes += mine
        for number in dict.fromkeys(p.get("process") or "0" for p in mine):
            samples += rows.samples.get((c.key, number), [])
    results = [_where(c) for c in chosen]
    if mixed:
        results, processes, samples = (
            [{k: v for k, v in row.items() if k in columns} for row in rows]
            for rows, columns in ((results, RESULT_COLUMNS), (processes, PROCESS_COLUMNS), (samples, SAMPLE_COLUMNS))
        )
    store = RunStore(run_dir)
    try:
        store.replace_rows(results, processes, samples)
    except UnknownColumnError as exc:
        raise MergeError(
            f"an attempt has a column this linbench does not write ({exc.args[0]}); "
            "merge with --allow-mixed to leave it out"
        ) from None
    store.write_meta(meta)


@dataclass(frozen=True)
class AttemptRows:
    """An attempt's processes by point, and its samples by point and process."""

    processes: dict[Key, list[dict[str, str]]]
    samples: dict[tuple[Key, str], list[dict[str, str]]]

    @classmethod
    def read(cls, folder: Path) -> AttemptRows:
        keys: dict[tuple[str | None, ...], Key] = {}  # a point's cells, as written, to its key

        def key_of(row: dict[str, str]) -> Key:
            cells = tuple(map(row.get, KEY_COLUMNS))  # every sample of a process repeats them
            return keys.get(cells) or keys.setdefault(cells, row_key(row))

        processes: dict[Key, list[dict[str, str]]] = {}
        for row in whole_rows(folder / PROCESSES_FILE):
            processes.setdefault(key_of(row), []).append(row)
        samples: dict[tuple[Key, str], list[dict[str, str]]] = {}
        for row in whole_rows(folder / SAMPLES_FILE):
            samples.setdefault((key_of(row), row.get("process") or "0"), []).append(row)
        return cls(processes, samples)


def _where(c: Chosen) -> dict[str, str]:
    """The row, its ``where`` columns filled in from its attempt where the row lacks them
    (every row of an attempt shares its device and cores; a row from before the where
    columns, or written by hand, has none), and the attempt it came from."""
    row = dict(c.row)
    fleet = c.attempt.fleet
    for column in WHERE_COLUMNS:
        if not row.get(column) and fleet.get(column) is not None:
            row[column] = str(fleet[column])
    row["attempt"] = str(c.attempt.number)
    return row
