"""``linbench.load_run``: a run folder's rows, typed, for a script or a notebook.

The rows are the ones every linbench reader sees (rows.py: a row no writer finished is left
out, and named in ``left_out``), each cell typed by its column's declaration (schema.py:
``causal`` is True, ``time_ms`` 42.5, an empty cell None). A run written by a newer linbench
is refused (schema_version.py); an older one is read as it is, without the columns it predates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linbench.results.rows import read_rows, typed
from linbench.results.schema_version import check_schema_version
from linbench.results.store import META_FILE, PROCESSES_FILE, RESULTS_FILE

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LoadedRun", "load_run"]


@dataclass(frozen=True)
class LoadedRun:
    """One run folder: ``rows`` of results.csv (one a point) and ``processes`` of
    processes.csv (one a worker process of a point; none in a run from before it), typed;
    ``meta`` its meta.json; ``left_out`` a line per file whose torn or malformed rows were
    left out; ``columns`` and ``process_columns`` the files' headers."""

    path: Path
    meta: dict[str, Any]
    rows: list[dict[str, Any]]
    processes: list[dict[str, Any]]
    left_out: list[str] = field(default_factory=list)
    columns: tuple[str, ...] = ()
    process_columns: tuple[str, ...] = ()

    def frame(self) -> pd.DataFrame:
        """The results rows as a pandas DataFrame, one column per column of results.csv (a
        number column with empty cells holds NaN there)."""
        return _frame(self.rows, self.columns)

    def processes_frame(self) -> pd.DataFrame:
        """The process rows as a pandas DataFrame, one column per column of processes.csv."""
        return _frame(self.processes, self.process_columns)


def load_run(path: str | Path) -> LoadedRun:
    """The run in folder ``path`` (or the folder of the results.csv ``path``).
    FileNotFoundError for a folder without results.csv; ValueError for a run written by a newer
    linbench (results/schema_version.py), a meta.json that is not JSON, or a results.csv that is not
    one (rows.CsvFileError)."""
    folder = Path(path)
    folder = folder.parent if folder.is_file() else folder
    meta = _meta(folder / META_FILE)
    left_out: list[str] = []
    rows, columns = _typed_rows(folder / RESULTS_FILE, left_out)
    processes: list[dict[str, Any]] = []
    process_columns: tuple[str, ...] = ()
    if (folder / PROCESSES_FILE).is_file():
        processes, process_columns = _typed_rows(folder / PROCESSES_FILE, left_out)
    return LoadedRun(folder, meta, rows, processes, left_out, columns, process_columns)


def _meta(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{str(path)!r} is not valid JSON: {exc}") from None
    check_schema_version(meta, str(path))
    return meta if isinstance(meta, dict) else {}


def _typed_rows(path: Path, left_out: list[str]) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The whole rows of ``path``, typed, and its header; the rows left out named in ``left_out``."""
    read = read_rows(path)
    if (warning := read.warning("left out")) is not None:
        left_out.append(warning)
    return [typed(row) for row in read.rows], read.header


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd  # only a caller who asks for a frame pays for pandas

    return pd.DataFrame(rows, columns=list(columns))
