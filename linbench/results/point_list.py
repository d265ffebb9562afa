"""A list of points as a CSV file of their key columns: what ``linbench run --only-points``
reads, so that a sweep measures some of its points and not all.

Any run file with the key columns is such a list (a results.csv, or one filtered from it), so
a user can hand ``--only-points`` the points of an earlier run; ``linbench ab`` writes one for
the rounds past those asked for, with the points that still need a round (ab/job.py). A point
is named by its key (record.row_key), so it matches a planned point exactly or not at all. It
is read as every run file is (rows.py), and a row no writer finished refuses the list.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from linbench.results.record import Key, row_key
from linbench.results.rows import CsvFileError, UnreadableFileError, read_rows
from linbench.results.schema import KEY_COLUMNS, REQUIRED_KEY_COLUMNS


class PointListError(ValueError):
    """A point list that cannot be read; the message is one line naming the file."""


def write_point_list(path: Path, keys: Iterable[Key]) -> Path:
    """Write ``keys`` (record.row_key's, in KEY_COLUMNS order) to ``path`` as a CSV of the key
    columns, sorted, so the same points give the same file; ``path``."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(KEY_COLUMNS)
        writer.writerows(sorted(set(keys)))
    return path


def read_point_list(path: Path) -> frozenset[Key]:
    """The points a CSV names by their key columns (other columns are ignored, so a results.csv
    is one); PointListError when it cannot be read, lacks a key column, names no point, or has a
    row no writer finished (rows.py: torn by a kill, a cell that is not its column's type): a
    list with rows left out would measure fewer points than it names, without a word."""
    try:
        read = read_rows(path)
    except FileNotFoundError as exc:
        raise PointListError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except UnreadableFileError as exc:  # a permission, a folder, bytes that are not text
        raise PointListError(f"{path}: cannot read it: {exc}") from None
    except CsvFileError as exc:
        if path.stat().st_size == 0:
            raise PointListError(f"{path}: not a list of points: no {', '.join(REQUIRED_KEY_COLUMNS)} column") from None
        raise PointListError(f"{path}: not a CSV file: {exc}") from None
    missing = [c for c in REQUIRED_KEY_COLUMNS if c not in read.header]
    if missing:
        raise PointListError(f"{path}: not a list of points: no {', '.join(missing)} column")
    if read.bad:
        raise PointListError(f"{path}: {read.summary()}; mend or drop those lines, or resume the run they came from")
    keys = frozenset(row_key(row) for row in read.rows)
    if not keys:
        raise PointListError(f"{path}: names no point")
    return keys
