"""``linbench.load_run``: a run folder's rows, typed, for a script or a notebook.

The rows are the ones every linbench reader sees (rows.py: a row no writer finished is left
out, and named in ``left_out``), each cell typed by its column's declaration (schema.py:
``causal`` is True, ``time_ms`` 42.5, an empty cell None). A run written by a newer linbench
is refused (schema_version.py). An older one reads as the reports read it: every column its file
declares today is in every row, a column the run predates as its default, the key columns
KEY_DEFAULTS names from their column (``kv_heads`` and ``v_heads``: the row's ``heads``) and any
other None, so ``row["kv_heads"]`` means the same in a script as in ``linbench report``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linbench.results.rows import read_rows, typed
from linbench.results.schema import KEY_DEFAULTS, PROCESS_COLUMNS, RESULT_COLUMNS
from linbench.results.schema_version import read_meta_json
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
    FileNotFoundError for a folder without results.csv; ValueError for an empty path, another
    file than a results.csv, a run written by a newer
    linbench (results/schema_version.py), a meta.json that cannot be read or is not a JSON
    object, or a results.csv that is not one (rows.CsvFileError)."""
    if not isinstance(path, str | Path) or str(path) == "":
        raise ValueError(f"load_run takes a run folder (or its results.csv) as a path; got {path!r}")
    folder = Path(path)
    if folder.is_file() and folder.name != RESULTS_FILE:  # another file would load its folder's run
        raise ValueError(f"load_run: {str(folder)!r} is a file, not a run folder nor its {RESULTS_FILE}")
    folder = folder.parent if folder.is_file() else folder
    meta = read_meta_json(folder / META_FILE, missing_ok=True)
    left_out: list[str] = []
    rows, columns = _typed_rows(folder / RESULTS_FILE, RESULT_COLUMNS, left_out)
    processes: list[dict[str, Any]] = []
    process_columns: tuple[str, ...] = ()
    if (folder / PROCESSES_FILE).is_file():
        processes, process_columns = _typed_rows(folder / PROCESSES_FILE, PROCESS_COLUMNS, left_out)
    return LoadedRun(folder, meta, rows, processes, left_out, columns, process_columns)


def _typed_rows(
    path: Path, declared: tuple[str, ...], left_out: list[str]
) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The whole rows of ``path``, typed and completed to the ``declared`` columns (_completed),
    and the columns they hold: the declared ones, then any other of the header's; the rows left
    out named in ``left_out``."""
    read = read_rows(path)
    if (warning := read.warning("left out")) is not None:
        left_out.append(warning)
    columns = tuple(dict.fromkeys((*declared, *read.header)))
    return [_completed(typed(row), declared) for row in read.rows], columns


def _completed(row: dict[str, Any], declared: tuple[str, ...]) -> dict[str, Any]:
    """``row`` with every ``declared`` column: one it lacks (a run from before it) or left empty
    read as KEY_DEFAULTS says where it names a column (kv_heads, v_heads: heads), else None."""
    full = {name: row.get(name) for name in declared} | row
    for column, source in KEY_DEFAULTS.items():
        if source is not None and column in full and full[column] is None:
            full[column] = full.get(source)
    return full


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd  # only a caller who asks for a frame pays for pandas

    return pd.DataFrame(rows, columns=list(columns))
