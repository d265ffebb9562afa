"""What the attempts of a shard have produced, and what is left to run.

A shard may take several attempts: an agent that dies leaves a partial one, and what is left
runs as a further attempt. An attempt asked for every point of its shard starts a *chain*;
an attempt asked for what an earlier one left continues it. A chain stays on one card: when a
shard must go on on another card, it starts over (a new chain), so that no scenario's curve
mixes two cards. The rows a shard contributes are those of its latest complete chain (or of
its latest chain when none is complete), a later attempt's row for a point replacing an
earlier one's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linbench.fleet.errors import MergeError
from linbench.fleet.folders import attempts
from linbench.fleet.shards import Shard
from linbench.results.record import Key, row_key
from linbench.results.rows import CsvFileError, UnreadableFileError, read_rows
from linbench.results.store import META_FILE, RESULTS_FILE, NewerRunError, RunStore, RunStoreError


@dataclass(frozen=True)
class Attempt:
    """One attempt folder of a shard, as read back."""

    number: int
    path: Path
    meta: dict[str, Any]
    asked: tuple[Key, ...]
    rows: dict[Key, dict[str, str]]  # results rows by key (the last one where a key repeats)

    @property
    def fleet(self) -> dict[str, Any]:
        return dict(self.meta.get("fleet", {}))

    @property
    def gpu_uuid(self) -> str:
        return str(self.fleet.get("gpu_uuid", ""))


def read_attempts(run_dir: Path, shard: Shard, damaged: list[str] | None = None) -> list[Attempt]:
    """The shard's attempts that got as far as writing their meta.json, oldest first. One whose
    meta.json or results.csv cannot be read (not what linbench writes: an edit, a disk fault)
    is left out, and named in ``damaged`` where given: a merge refuses it, where a running
    fleet goes on without it."""
    found = []
    for number, path in attempts(run_dir, shard.id):
        if not (path / META_FILE).is_file():
            continue  # claimed, then the agent died before writing anything
        try:
            meta = RunStore(path).read_meta()
            rows = {row_key(row): row for row in _rows_or_none(path / RESULTS_FILE)}
        except NewerRunError:
            raise  # an attempt of a newer linbench is never merged as if it were known
        except (RunStoreError, CsvFileError) as exc:
            if damaged is not None:
                damaged.append(f"{path.relative_to(run_dir)}: {exc}")
            continue
        asked = tuple(tuple(str(v) for v in key) for key in meta.get("fleet", {}).get("keys", []))
        found.append(Attempt(number, path, meta, asked, rows))
    return found


def _rows_or_none(path: Path) -> list[dict[str, str]]:
    """The whole rows of an attempt's results.csv; none where it is missing or empty (claimed,
    then killed before it wrote a header); CsvFileError where it is no CSV linbench wrote."""
    if not path.is_file() or path.stat().st_size == 0:
        return []
    return read_rows(path).rows  # an unreadable file is UnreadableFileError, a CsvFileError


def whole_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an attempt's CSV file its writer finished (results/rows.py: a line a kill
    cut short, or a cell that does not read as its column, is left out); none when the file
    is missing or empty (an attempt claimed, then killed before it wrote a header). MergeError
    when it cannot be read or is not text: merged around, its rows would be lost without a word."""
    try:
        return read_rows(path).rows
    except UnreadableFileError as exc:
        raise MergeError(f"{exc}; repair that attempt or move its folder out of the run, then merge") from None
    except (FileNotFoundError, CsvFileError):
        return []


def chains(found: list[Attempt], shard: Shard) -> list[list[Attempt]]:
    """The attempts grouped into chains, each begun by an attempt asked for the whole shard."""
    whole = set(shard.keys)
    out: list[list[Attempt]] = []
    for attempt in found:
        if set(attempt.asked) >= whole or not out:
            out.append([attempt])
        else:
            out[-1].append(attempt)
    return out


def chain_rows(chain: list[Attempt]) -> dict[Key, tuple[Attempt, dict[str, str]]]:
    """Each point's row in a chain, from the latest attempt that has one."""
    rows: dict[Key, tuple[Attempt, dict[str, str]]] = {}
    for attempt in chain:
        for key, row in attempt.rows.items():
            rows[key] = (attempt, row)
    return rows


def chosen_chain(found: list[Attempt], shard: Shard) -> list[Attempt]:
    """The chain whose rows count: the latest complete one, else the latest (empty: none)."""
    every = chains(found, shard)
    complete = [c for c in every if set(shard.keys) <= set(chain_rows(c))]
    if complete:
        return complete[-1]
    return every[-1] if every else []


def continued_rows(run_dir: Path, shard: Shard, gpu_uuid: str) -> tuple[dict[str, str], ...]:
    """The rows an attempt on the card ``gpu_uuid`` continues from: its chain's, when that
    chain ran on this card (they teach its skip rules); none when the shard starts over."""
    chain = chosen_chain(read_attempts(run_dir, shard), shard)
    if {a.gpu_uuid for a in chain if a.rows} - {gpu_uuid}:
        return ()
    return tuple(row for _, row in chain_rows(chain).values())


def pending(run_dir: Path, shard: Shard, gpu_uuid: str) -> tuple[tuple[Key, ...], bool]:
    """(the points to run on the card ``gpu_uuid``, whether that starts the shard over): none
    when a chain is complete; the points the chain lacks when it is on this card; else all."""
    chain = chosen_chain(read_attempts(run_dir, shard), shard)
    done = set(chain_rows(chain))
    if set(shard.keys) <= done:
        return (), False
    if {a.gpu_uuid for a in chain if a.rows} - {gpu_uuid}:
        return shard.keys, True
    return tuple(key for key in shard.keys if key not in done), not chain
