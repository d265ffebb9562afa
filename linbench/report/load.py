"""Run folders read back for the reports, with every way they can be broken named.

A run folder holds results.csv (and meta.json, and processes.csv where each point was
measured in worker processes of its own); a folder of runs holds run folders. A file that is
missing, is not CSV or lacks columns raises ReportInputError naming the file and the problem.
A row no writer finished (torn mid-write, cells missing or of the wrong type: rows.py) is
left out, and the run's ``warnings`` name it in one line per file: no report, figure or
comparison uses it, and a point whose results row is left out is left out of all of them.
``history`` and ``budget`` take a run's points as all it measured (a series, a limit per
point), so for them such a run is refused, in that line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from linbench.results.rows import CsvFileError, CsvRows, read_rows
from linbench.results.schema import (
    COLUMNS,
    KEY_COLUMNS,
    KEY_DEFAULTS,
    REQUIRED_KEY_COLUMNS,
    REQUIRED_RESULT_COLUMNS,
    STATUSES,
)
from linbench.results.schema_version import MetaFileError, NewerSchemaError, read_meta_json
from linbench.results.store import META_FILE, PROCESSES_FILE, RESULTS_FILE
from linbench.units import parse_size

# processes.csv (PROCESSES_FILE): one row per worker process that measured a point (absent from older runs).
PROCESS_REQUIRED_COLUMNS = (*REQUIRED_KEY_COLUMNS, "process", "status", "time_ms")
# Columns the reports read in every run, empty where an older run lacks them (results.csv:
# those added with linbench decode; processes.csv: those the gate compares).
ALWAYS_RESULT_COLUMNS = ("context", "time_per_token_ms", "state_bytes", "alloc_peak_bytes")
ALWAYS_PROCESS_COLUMNS = ("device_ms", "peak_bytes", "alloc_peak_bytes", "kernels_per_call", "host_syncs")


# A row's chunk where no --chunk sweep set one.
NO_CHUNK = 0


class ReportInputError(ValueError):
    """A results file or folder the reports cannot read."""


@dataclass
class Run:
    """One run: its results and, when present, its meta.json and its processes (one row per
    worker process that measured a point; None for a run that recorded none), and a line per
    file whose torn or malformed rows were left out."""

    path: Path
    results: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    processes: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name


def find_run_dirs(path: Path) -> list[Path]:
    """The run folders at ``path``: a results.csv, a run folder, or a folder of run folders."""
    if path.is_file():
        return [path.parent] if path.name == RESULTS_FILE else _not_results(path)
    if not path.is_dir():
        raise ReportInputError(f"{str(path)!r} does not exist")
    if (path / RESULTS_FILE).is_file():
        return [path]
    runs = sorted(p for p in path.iterdir() if (p / RESULTS_FILE).is_file())
    if not runs:
        raise ReportInputError(f"{str(path)!r} holds no {RESULTS_FILE} (neither a run folder nor a folder of runs)")
    return runs


def _not_results(path: Path) -> list[Path]:
    raise ReportInputError(f"{str(path)!r} is not a {RESULTS_FILE}")


def read_run(path: Path, whole: str | None = None) -> Run:
    """The run in folder ``path`` (or the folder of the results.csv ``path``); ReportInputError
    for one written by a newer schema (results/schema_version.py) before its files are read.
    ``whole``: the command reading it (``history``, ``budget``) takes a run's rows as all it
    measured, so a file with rows left out is a ReportInputError naming them, not a warning."""
    folder = path.parent if path.is_file() else path
    csv_path = folder / RESULTS_FILE
    warnings: list[str] = []
    meta = read_meta(folder)
    results = read_results(csv_path, warnings, whole)
    if token_budget(meta):
        results["tokens"] = results["batch"] * results["seq"]
    processes_csv = folder / PROCESSES_FILE
    has_processes = processes_csv.is_file() and processes_csv.stat().st_size
    processes = read_processes(processes_csv, warnings, whole) if has_processes else None
    if processes is not None and processes.empty:
        processes = None  # a header alone: no process recorded (a run made without them, or stopped early)
    return Run(folder, results, meta, processes, warnings)


def read_meta(folder: Path) -> dict[str, Any]:
    """``folder``'s meta.json ({} where it has none); ReportInputError when it cannot be read,
    is not a JSON object, or says the run was written by a newer schema than this linbench reads."""
    try:
        return read_meta_json(folder / META_FILE, missing_ok=True)
    except (MetaFileError, NewerSchemaError) as exc:
        raise ReportInputError(str(exc)) from None


def token_budget(meta: dict[str, Any]) -> int | None:
    """The tokens per point of a ``run --tokens`` sweep (batch = tokens / seq), else None."""
    sweep = meta.get("sweep")
    if not isinstance(sweep, dict) or sweep.get("command", "run") != "run":
        return None  # decode's "tokens" is how many it generates
    settings = sweep.get("settings")
    tokens = settings.get("tokens") if isinstance(settings, dict) else None
    try:
        return parse_size(str(tokens)) if tokens not in (None, "") else None
    except ValueError:
        return None


def read_results(csv_path: Path, warnings: list[str] | None = None, whole: str | None = None) -> pd.DataFrame:
    """results.csv's whole rows as a typed DataFrame; ReportInputError for a file that is not
    one. The rows left out are named in a line appended to ``warnings`` (refused: ``whole``)."""
    outcome = "their points count as not measured"
    frame, read = _read_csv(csv_path, REQUIRED_RESULT_COLUMNS, warnings, outcome, whole)
    if frame.empty and read.bad:  # rows there were, but none whole: say why, not "empty"
        raise ReportInputError(f"{str(csv_path)!r} holds no usable results: {read.summary()}")
    if frame.empty:
        raise ReportInputError(f"{str(csv_path)!r} holds no results (an empty run)")
    return _typed(frame, ALWAYS_RESULT_COLUMNS, csv_path)


def read_processes(csv_path: Path, warnings: list[str] | None = None, whole: str | None = None) -> pd.DataFrame:
    """processes.csv as a typed DataFrame (one row per worker process of a point), checked
    like results.csv; it may be empty (a run stopped before its first process finished)."""
    frame, _ = _read_csv(csv_path, PROCESS_REQUIRED_COLUMNS, warnings, "those processes are not used", whole)
    return _typed(frame, ALWAYS_PROCESS_COLUMNS, csv_path)


def _typed(frame: pd.DataFrame, always: tuple[str, ...], csv_path: Path) -> pd.DataFrame:
    """``frame`` with the ``always`` columns it lacks added empty, and every number and flag
    column typed as schema.py declares it: a key size as a positive whole number, any other
    number as a float (NaN where a cell is empty), a flag as True or False (None where a cell
    is empty: causal never is, _read_csv). Text stays as read."""
    for column in always:
        if column not in frame.columns:
            frame[column] = ""
    _fill_keys(frame)
    numbers: list[str] = []
    for name in frame.columns:
        declared = COLUMNS.get(name)
        if declared is not None and declared.kind is bool and name != "causal":
            frame[name] = frame[name].map(declared.parse)
        elif declared is not None and declared.kind in (int, float):
            numbers.append(name)
    if not numbers:
        return frame
    # The number columns parsed as one block and put back as one: column by column, pandas'
    # overhead was most of the reading of a run (some sixty of them a file; `linbench history`
    # reads hundreds of runs).
    where = repr(str(csv_path))
    values = _numbers(frame[numbers], where)
    typed = {
        # The sizes of the point (KEY_COLUMNS): always there, always whole.
        name: _whole(values[:, i], name, where) if name in KEY_COLUMNS else values[:, i]
        for i, name in enumerate(numbers)
    }
    return pd.concat([frame.drop(columns=numbers), pd.DataFrame(typed, index=frame.index)], axis=1)[frame.columns]


def _fill_keys(frame: pd.DataFrame) -> None:
    """The key columns a file from an older run lacks (or left empty) as KEY_DEFAULTS says:
    kv_heads and v_heads the row's heads. An empty chunk (the impl's own chunk size, or an impl without
    one) reads as NO_CHUNK, so that every key column is a number a point can be matched on."""
    for column, default in KEY_DEFAULTS.items():
        if column not in frame.columns:
            frame[column] = ""
        empty = frame[column] == ""
        if default is not None:
            frame.loc[empty, column] = frame.loc[empty, default]
        elif COLUMNS[column].kind is int:  # chunk, tokens_per_step: 0, none
            frame.loc[empty, column] = str(NO_CHUNK)


def _read_csv(
    csv_path: Path, required: tuple[str, ...], warnings: list[str] | None, outcome: str, whole: str | None = None
) -> tuple[pd.DataFrame, CsvRows]:
    """A run's CSV file's whole rows as strings (rows.py), with its required columns, statuses
    and masking checked, and what was read (the rows left out among it); the rows left out
    named in a line appended to ``warnings``, which ends with ``outcome``, or, where the
    command ``whole`` reads the file, refused in that line."""
    where = repr(str(csv_path))
    try:
        read = read_rows(csv_path)
    except FileNotFoundError:
        raise ReportInputError(f"{where} does not exist") from None
    except (OSError, CsvFileError) as exc:
        raise ReportInputError(str(exc)) from None
    if whole is not None and read.bad:
        refusal = f"linbench {whole} takes only whole runs: resume the run (--resume) to measure them again"
        raise ReportInputError(str(read.warning(refusal)))
    if (warning := read.warning(outcome)) is not None and warnings is not None:
        warnings.append(warning)
    frame = pd.DataFrame(read.rows, columns=list(read.header), dtype=str)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ReportInputError(f"{where} lacks column(s) {', '.join(missing)}")
    bad_status = sorted(set(frame["status"]) - set(STATUSES))
    if bad_status:
        raise ReportInputError(f"{where}: unknown status {bad_status[0]!r}; statuses: {', '.join(STATUSES)}")
    frame["causal"] = frame["causal"].map(COLUMNS["causal"].parse)
    if frame["causal"].isna().any():
        raise ReportInputError(f"{where}: column causal must be True or False")
    return frame, read


def _numbers(text: pd.DataFrame, where: str) -> np.ndarray:
    """``text``'s cells as floats (NaN where empty), a column to a column of the array; the
    first cell that is no number refused with its column and row."""
    cells = text.to_numpy(dtype=object)
    try:
        return np.where(cells == "", "nan", cells).astype(np.float64)  # float() of each cell
    except ValueError:
        pass
    for column, name in enumerate(text.columns):
        for row, cell in enumerate(cells[:, column]):
            try:
                float(cell or "nan")
            except ValueError:
                raise ReportInputError(f"{where}: column {name} holds {cell!r} (row {text.index[row] + 2})") from None
    raise AssertionError("unreachable: some cell was no number")


def _whole(values: np.ndarray, name: str, where: str) -> np.ndarray:
    """A key column's floats as whole numbers: positive (chunk and tokens_per_step may be 0)."""
    least = 0 if name in ("chunk", "tokens_per_step") else 1
    if np.isnan(values).any() or (values < least).any():
        raise ReportInputError(f"{where}: column {name} must hold positive whole numbers")
    return values.astype(int)


def load_runs(paths: list[Path]) -> list[Run]:
    """Every run under ``paths`` (run folders, results.csv files, folders of runs), in order."""
    runs: list[Run] = []
    for path in paths:
        runs += [read_run(folder) for folder in find_run_dirs(path)]
    return runs


def read_single_run(path: Path, whole: str | None = None) -> Run:
    """The one run at ``path`` (read_run's ``whole``); ReportInputError when it holds several."""
    folders = find_run_dirs(path)
    if len(folders) > 1:
        raise ReportInputError(f"{str(path)!r} holds {len(folders)} runs; name one run folder")
    return read_run(folders[0], whole)
