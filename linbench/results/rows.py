"""A run's CSV file read back row by row, keeping only the rows its writer finished.

The writers (store.py) append whole rows, each ending with a line end, every cell written
as schema.py declares it. A kill, a full disk or a hand edit can leave a row that is not
that: a last line without its line end (torn mid-write: ``...,ok,4`` for a point that
measured 42.5 ms), a row with too few or too many cells, or a cell that does not read as its
column's type. Such a row is never data: ``read_rows`` keeps it out and names it, and every
reader (the reports, the gate, a resumed run, the fleet's merge) goes through here, so all of them see the same
points with the same figures.

A whole row is then typed once, here (``typed``): every declared column's cell as its
schema.py type (Column.parse: ``"True"`` is True, ``"42.5"`` is 42.5, an empty cell None), so
no reader re-parses a flag or a number from text.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from linbench.results.record import row_key
from linbench.results.schema import (
    COLUMNS,
    KEY_COLUMNS,
    KEY_DEFAULTS,
    REQUIRED_KEY_COLUMNS,
    RESULT_COLUMNS,
    STATUSES,
    cell,
)

__all__ = [
    "BadRow",
    "CsvFileError",
    "CsvRows",
    "UnreadableFileError",
    "as_read",
    "is_set",
    "read_rows",
    "read_typed",
    "row_problem",
    "typed",
]

# What a cell of each declared type must read as, for the warning.
KIND_WORDS = {int: "a whole number", float: "a number", bool: "True or False", str: "text"}
# How many bad rows a warning lists by line before it only counts the rest.
LISTED = 3


class CsvFileError(ValueError):
    """A file that cannot be read as CSV at all (empty, not text, no header)."""


class UnreadableFileError(CsvFileError):
    """A file whose bytes cannot be read, or are not text before its last line: no kill
    mid-write leaves one (a cut inside its last line's character is a torn row), so no repair
    may cut it (an edit, a disk fault, a permission)."""


@dataclass(frozen=True)
class BadRow:
    """A row left out: its line in the file, why, and its point's key where that reads."""

    line: int
    reason: str
    key: tuple[str, ...] | None = None


@dataclass
class CsvRows:
    """The header and the whole rows of one file, and the rows left out."""

    path: Path
    header: tuple[str, ...]
    rows: list[dict[str, str]]
    bad: list[BadRow] = field(default_factory=list)

    def warning(self, outcome: str = "their points count as not measured") -> str | None:
        """One line naming the file, the rows left out and ``outcome``; None when every row is whole."""
        if not self.bad:
            return None
        return f"{str(self.path)!r}: {self.summary()}; {outcome}"

    def summary(self) -> str:
        """``2 rows left out (line 2 ...; line 3 ...)``: how many rows were left out, and why."""
        listed = "; ".join(f"line {bad.line} {bad.reason}" for bad in self.bad[:LISTED])
        more = f"; and {len(self.bad) - LISTED} more" if len(self.bad) > LISTED else ""
        rows = "row" if len(self.bad) == 1 else "rows"
        return f"{len(self.bad)} {rows} left out ({listed}{more})"


def typed(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` (whole: read_rows's) with every declared column's cell as its type
    (Column.parse), an empty cell None; a column linbench does not declare stays as read."""
    return {name: COLUMNS[name].parse(value) if name in COLUMNS else value for name, value in row.items()}


def is_set(flag: Any) -> bool:
    """Whether a flag read back is set: True (or numpy's True in a pandas frame); False, an
    empty cell (None) and NaN are not."""
    return bool(flag == True)  # noqa: E712 - numpy's True_ equals True without being it


def as_read(row: Mapping[str, Any], columns: tuple[str, ...] = RESULT_COLUMNS) -> dict[str, Any]:
    """A row as written (typed values, floats at full precision) as a reader gets it back from
    the file of ``columns``: every column (None where the row has none), each cell as
    schema.cell writes it, then typed. The listener of a run hears the same values that the
    run's Outcome.rows and ``load_run`` give."""
    return typed({name: cell(row.get(name)) for name in columns})


def read_typed(path: Path) -> list[dict[str, Any]]:
    """``path``'s whole rows, typed (``typed``); the rows no writer finished left out."""
    return [typed(row) for row in read_rows(path).rows]


def _text(raw: bytes) -> str:
    """The file's text. A write cut short can stop inside a character (the error and notes
    cells hold ≥, ×, ·): bytes that are not UTF-8 in the last line, one no line end closes, are
    that line torn, kept as text for the torn-row rule below; anywhere else they are no file a
    writer wrote (UnicodeDecodeError)."""
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        last_end = raw.rfind(b"\n") + 1
        if exc.start < last_end or last_end == 0:  # a complete line, or the header (ASCII): not a cut
            raise
        return raw[:last_end].decode() + raw[last_end:].decode(errors="replace")


def read_rows(path: Path) -> CsvRows:
    """``path``'s whole rows as strings (blank lines skipped), the rest named in ``bad``;
    CsvFileError for a file with no header, UnreadableFileError for one that cannot be read or
    is not text; FileNotFoundError as raised."""
    try:
        data = _text(path.read_bytes())
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"{str(path)!r} is not a linbench results CSV: {exc}") from None
    except FileNotFoundError:
        raise
    except OSError as exc:  # a permission, a folder by that name
        raise UnreadableFileError(f"{str(path)!r} cannot be read: {exc.strerror or exc}") from None
    try:
        records = _records(data)
    except csv.Error as exc:
        raise CsvFileError(f"{str(path)!r} is not a linbench results CSV: {exc}") from None
    if not records:
        raise CsvFileError(f"{str(path)!r} is not a linbench results CSV: the file is empty")
    header = tuple(records[0][1])
    # A writer ends every row with a line end: a last line without one was cut mid-write.
    torn_line = records[-1][0] if len(records) > 1 and not data.endswith("\n") else None
    result = CsvRows(path, header, [])
    for line, cells in records[1:]:
        if not cells:
            continue
        problem = "is torn (the file ends mid-row)" if line == torn_line else row_problem(header, cells)
        if problem is None:
            result.rows.append(dict(zip(header, cells, strict=True)))
        else:
            result.bad.append(BadRow(line, problem, _key(header, cells)))
    return result


def _records(data: str) -> list[tuple[int, list[str]]]:
    """Each CSV record with the line it starts on (a quoted cell may span lines)."""
    reader = csv.reader(io.StringIO(data, newline=""))
    records, line = [], 1
    for cells in reader:
        records.append((line, cells))
        line = reader.line_num + 1
    return records


def row_problem(header: tuple[str, ...], cells: list[str]) -> str | None:
    """Why a row is not one a writer wrote under ``header``; None for a whole row."""
    if len(cells) != len(header):
        return f"has {len(cells)} cells where the header has {len(header)}"
    for name, value in zip(header, cells, strict=True):
        problem = _cell_problem(name, value)
        if problem is not None:
            return problem
    return None


# The times a measurement writes: never 0, negative or infinite (an edit, a disk fault), which
# no figure's log axis or ratio could take.
MEASURED_TIMES = frozenset({"time_ms", "time_ms_p20", "time_ms_p80", "device_ms", "time_per_token_ms"})


# Rows repeat their key cells (samples.csv: every repetition of a process), so a cell is checked
# once per value rather than once per row: a merge reads millions of them.
@lru_cache(maxsize=4096)
def _cell_problem(name: str, value: str) -> str | None:
    """Why ``value`` is not a cell of the column ``name``; None for one."""
    column = COLUMNS.get(name)
    if column is None:
        return None  # a column linbench does not declare: not its to check
    if value == "":
        if (name in KEY_COLUMNS and name not in KEY_DEFAULTS) or name == "status":
            return f"has no {name}"
        return None  # kv_heads, chunk: empty reads as KEY_DEFAULTS says
    if name == "status" and value not in STATUSES:
        return f"has status {value!r}, not one of {', '.join(STATUSES)}"
    parsed = column.parse(value)
    if parsed is None:
        return f"has {name} {value!r}, not {KIND_WORDS[column.kind]}"
    if name in KEY_COLUMNS and column.kind is int and parsed <= 0:
        return f"has {name} {value!r}, not a positive whole number"
    if name in MEASURED_TIMES and not 0 < parsed < math.inf:
        return f"has {name} {value!r}, not a time (a finite number above 0)"
    return None


def _key(header: tuple[str, ...], cells: list[str]) -> tuple[str, ...] | None:
    """The point's key (record.row_key's order) where every key cell of the row reads and is
    followed by another cell (a torn row's last cell may be cut short: "1024" as "10")."""
    if any(name not in header for name in REQUIRED_KEY_COLUMNS):
        return None
    if len(cells) <= max(header.index(name) for name in KEY_COLUMNS if name in header) + 1:
        return None
    named = dict(zip(header, cells, strict=False))
    for name in KEY_COLUMNS:
        value = named.get(name, "")
        if value == "" and name in KEY_DEFAULTS:
            continue  # a key column older runs lack: read as KEY_DEFAULTS says (row_key)
        if value == "" or COLUMNS[name].parse(value) is None:
            return None
    return row_key(named)
