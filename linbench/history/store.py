"""The history file: one row per point per run (observations.py), so that a nightly job keeps
months of runs without their samples. A CSV file (``.csv``, or ``.csv.gz`` compressed), which
pandas reads as it is; it is a table of named columns rather than parquet because parquet would
need pyarrow (about 40 MB) for files of a few megabytes a year. Every row carries the file's
``history_schema``; a file from a newer linbench is refused, naming both versions.

Schema 2 added each point's ``status`` (a row for a point that was not ok, with no time) and the
timing settings (``env_threads``, ``env_cuda_graph``, ``env_timing_protocol``). A schema 1 file
is read as it is (its rows are ok points whose settings were not recorded), and the first rows
added to it rewrite it whole in schema 2's columns, so that no row lands under other columns."""

from __future__ import annotations

import csv
import gzip
import io
import os
from pathlib import Path
from typing import IO, cast

from linbench.history.observations import KEY_FIELDS, Observation

HISTORY_SCHEMA = 2
SCHEMA_FIELD = "history_schema"
_OBSERVATION_FIELDS = (
    "run", "commit", "commit_time", "started_at", "processes", "graph_ms", "cpu_ms", "p20_ms", "median_ms",
)  # fmt: skip
_ENV_FIELDS = tuple(
    f"env_{name}"
    for name in ("device_name", "driver", "torch", "cpu_count", "device_memory_bytes", "copy_gb_per_s", "matmul_tflops")
)
# Schema 1's columns: a file of them is read, and rewritten in COLUMNS when rows are added.
COLUMNS_1 = (SCHEMA_FIELD, *KEY_FIELDS, *_OBSERVATION_FIELDS, *_ENV_FIELDS)
COLUMNS = (*COLUMNS_1, "status", "env_threads", "env_cuda_graph", "env_timing_protocol")


class HistoryFileError(ValueError):
    """A history file that cannot be read or written: one line, naming the file."""


def is_history_file(path: Path) -> bool:
    return path.is_file() and (path.name.endswith(".csv") or path.name.endswith(".csv.gz"))


def read(path: Path) -> list[Observation]:
    """The observations of the history file ``path``; HistoryFileError for one that is not
    whole (a row cut short by a kill, or with too few or too many cells): its runs' points would
    be judged, and appended to, as if measured."""
    try:
        with _open(path, "r") as handle:
            text = handle.read()
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise HistoryFileError(f"{str(path)!r} is not a readable history file: {exc}") from None
    if rows and SCHEMA_FIELD not in rows[0]:
        raise HistoryFileError(f"{str(path)!r} is not a linbench history file (no {SCHEMA_FIELD} column)")
    if text and not text.endswith("\n"):
        raise HistoryFileError(f"{str(path)!r}: its last row is torn (the file ends mid-row); remove that line")
    for number, row in enumerate(rows, start=2):
        if None in row or None in row.values():  # csv's marks of a row longer or shorter than the header
            raise HistoryFileError(f"{str(path)!r} line {number} has other cells than the header names")
        version = row.get(SCHEMA_FIELD, "")
        if not version.isdigit():
            raise HistoryFileError(f"{str(path)!r} line {number}: {SCHEMA_FIELD} {version!r} is not a version")
        if int(version) > HISTORY_SCHEMA:
            raise HistoryFileError(
                f"{str(path)!r} was written with history schema {version}; this linbench reads up to "
                f"{HISTORY_SCHEMA}: upgrade linbench to read it"
            )
    return [Observation.from_record(row) for row in rows]


def add(path: Path, observations: list[Observation]) -> tuple[int, list[str]]:
    """Appends the observations of runs the file does not hold yet; returns how many rows were
    added and the runs that were already there (skipped, never doubled). A schema 1 file is
    written anew, its rows and the new ones, in this schema's columns."""
    header = _check_header(path) if path.exists() else ()
    held_rows = read(path) if path.exists() else []
    held = {(o.run, o.started_at) for o in held_rows}
    fresh = [o for o in observations if (o.run, o.started_at) not in held]
    skipped = sorted({o.run for o in observations if (o.run, o.started_at) in held})
    if not fresh:
        return 0, skipped
    if header == COLUMNS_1:
        _rewrite(path, [*held_rows, *fresh])
    else:
        _write(path, fresh, "a" if header else "w")  # a file with no header yet is begun anew
    return len(fresh), skipped


def _rows(observations: list[Observation], header: bool) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    if header:
        writer.writeheader()
    for observation in observations:
        writer.writerow({SCHEMA_FIELD: HISTORY_SCHEMA, **observation.record()})
    return buffer.getvalue()


def _write(path: Path, observations: list[Observation], mode: str) -> None:
    try:
        with _open(path, mode) as handle:
            handle.write(_rows(observations, header=mode == "w"))
    except OSError as exc:
        raise HistoryFileError(f"cannot write {str(path)!r}: {exc}") from None


def _rewrite(path: Path, observations: list[Observation]) -> None:
    """``path`` written anew with ``observations``, in this schema's columns; the old file
    stays whole until the new one is (a file beside it, then renamed over it)."""
    partial = path.with_name(path.name + ".partial" + (".gz" if path.name.endswith(".gz") else ""))
    _write(partial, observations, "w")
    try:
        os.replace(partial, path)
    except OSError as exc:
        raise HistoryFileError(f"cannot write {str(path)!r}: {exc}") from None


def _check_header(path: Path) -> tuple[str, ...]:
    """The file's columns: this schema's or schema 1's (COLUMNS_1, rewritten when rows are
    added). A file of other columns takes no rows: appended rows would land under other columns."""
    try:
        with _open(path, "r") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise HistoryFileError(f"{str(path)!r} is not a readable history file: {exc}") from None
    if header and tuple(header) not in (COLUMNS, COLUMNS_1):
        raise HistoryFileError(f"{str(path)!r} has other columns than this linbench writes: add to a new history file")
    return tuple(header)


def _open(path: Path, mode: str) -> IO[str]:
    if path.name.endswith(".gz"):
        return cast(IO[str], gzip.open(path, mode + "t", newline=""))  # a gzip file takes appended members
    return open(path, mode, newline="")
