"""Run files damaged as a kill or an edit leaves them: a last row torn mid-number, a middle
row with a cell that is not its column's type.

Importable from every test folder: tests/conftest.py puts this folder on sys.path.
"""

from __future__ import annotations

import csv
from pathlib import Path


def tear_last_row(path: Path, column: str = "time_ms") -> str:
    """Cut ``path``'s last row just after the first character of its ``column`` cell, with no
    line end (a write stopped there: ``...,ok,4`` for 42.5); the torn text."""
    header, *rows = path.read_text().splitlines(keepends=True)
    index = next(csv.reader([header])).index(column)
    cells = next(csv.reader([rows[-1]]))
    torn = ",".join(cells[:index]) + "," + cells[index][:1]
    path.write_text(header + "".join(rows[:-1]) + torn)
    return torn


def garble_row(path: Path, line: int, column: str = "time_ms", value: str = "4x2") -> None:
    """Put ``value`` into ``column`` of the row on ``line`` (the header is line 1); the file is
    written anew, each row with its line end."""
    with path.open(newline="") as handle:
        header, *rows = list(csv.reader(handle))
    rows[line - 2][header.index(column)] = value
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
