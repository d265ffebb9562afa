"""The history file: one row per point per run (observations.py), so that a nightly job keeps
months of runs without their samples. A CSV file (``.csv``, or ``.csv.gz`` compressed), which
pandas reads as it is; it is a table of named columns rather than parquet because parquet would
need pyarrow (about 40 MB) for files of a few megabytes a year. Every row carries the file's
``history_schema``; a file from a newer linbench is refused, naming both versions."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path
from typing import IO, cast

from linbench.history.observations import KEY_FIELDS, Observation

HISTORY_SCHEMA = 1
SCHEMA_FIELD = "history_schema"
_OBSERVATION_FIELDS = (
    "run", "commit", "commit_time", "started_at", "processes", "graph_ms", "cpu_ms", "p20_ms", "median_ms",
)  # fmt: skip
_ENV_FIELDS = tuple(
    f"env_{name}"
    for name in ("device_name", "driver", "torch", "cpu_count", "device_memory_bytes", "copy_gb_per_s", "matmul_tflops")
)
COLUMNS = (SCHEMA_FIELD, *KEY_FIELDS, *_OBSERVATION_FIELDS, *_ENV_FIELDS)


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
    added and the runs that were already there (skipped, never doubled)."""
    if path.exists():
        _check_header(path)
    held = {(o.run, o.started_at) for o in read(path)} if path.exists() else set()
    fresh = [o for o in observations if (o.run, o.started_at) not in held]
    skipped = sorted({o.run for o in observations if (o.run, o.started_at) in held})
    if not fresh:
        return 0, skipped
    new_file = not path.exists()
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    if new_file:
        writer.writeheader()
    for observation in fresh:
        writer.writerow({SCHEMA_FIELD: HISTORY_SCHEMA, **observation.record()})
    try:
        with _open(path, "a") as handle:
            handle.write(buffer.getvalue())
    except OSError as exc:
        raise HistoryFileError(f"cannot write {str(path)!r}: {exc}") from None
    return len(fresh), skipped


def _check_header(path: Path) -> None:
    """A file whose columns are not this linbench's takes no rows: appended rows would land under
    other columns."""
    try:
        with _open(path, "r") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise HistoryFileError(f"{str(path)!r} is not a readable history file: {exc}") from None
    if header and tuple(header) != COLUMNS:
        raise HistoryFileError(f"{str(path)!r} has other columns than this linbench writes: add to a new history file")


def _open(path: Path, mode: str) -> IO[str]:
    if path.name.endswith(".gz"):
        return cast(IO[str], gzip.open(path, mode + "t", newline=""))  # a gzip file takes appended members
    return open(path, mode, newline="")
