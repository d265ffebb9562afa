"""A run folder on disk, appended to one row at a time.

results.csv holds a row per point, processes.csv a row per worker process that measured a
point, samples.csv a row per timed repetition (columns: linbench/results/schema.py). Every
row is flushed as soon as it is written, so Ctrl-C or ``kill -9`` leaves valid CSV
files holding every finished point. Rows are read back through rows.py, which keeps out a
row no writer finished (a torn last line, a row with cells missing or of the wrong type).
A run folder opened again (``--resume``) first repairs what a kill or an edit can leave
behind: it drops such rows, saying so in ``repairs``, with the processes and samples of a
point whose result row was dropped (the point is measured again), and the samples of a
process whose row never made it. The processes of a point whose result row is not written
yet stay: a resumed run measures only the processes that point still lacks. A write that
fails (a full disk) raises RunStoreWriteError naming the file; what was written before
stays, so the folder can be resumed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from linbench.results.record import row_key
from linbench.results.rows import CsvFileError, CsvRows, UnreadableFileError, read_rows, read_typed
from linbench.results.schema import (
    KEY_COLUMNS,
    PROCESS_COLUMNS,
    RESULT_COLUMNS,
    SAMPLE_COLUMNS,
    cell,
    checked,
)
from linbench.results.schema_version import MetaFileError, NewerSchemaError, read_meta_json

RESULTS_FILE = "results.csv"
PROCESSES_FILE = "processes.csv"
SAMPLES_FILE = "samples.csv"
META_FILE = "meta.json"
WORKER_LOG = "worker.log"


class RunStoreError(ValueError):
    """A folder that is not a linbench run (for --resume)."""


class NewerRunError(RunStoreError):
    """A run written with a newer results schema than this linbench reads."""


class RunStoreWriteError(RunStoreError):
    """A file of the run folder could not be written (disk full, read-only, ...)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        super().__init__(f"cannot write {str(path)!r}: {exc.strerror or exc}")
        self.path = path


def _csv_text(rows: Iterable[Iterable[Any]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def _append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` and flush it; RunStoreWriteError naming the file on failure."""
    try:
        with path.open("a", newline="") as handle:
            handle.write(text)
            handle.flush()
    except OSError as exc:
        raise RunStoreWriteError(path, exc) from exc


def _replace_text(path: Path, text: str) -> None:
    """Replace ``path`` atomically: a kill or a full disk mid-write leaves the old file, and no
    temporary file behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunStoreWriteError(path, exc) from exc


def utc_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _process_key(row: Mapping[str, Any]) -> tuple[str, ...]:
    return (*row_key(row), str(row["process"]))


FILES = ((RESULTS_FILE, RESULT_COLUMNS), (PROCESSES_FILE, PROCESS_COLUMNS), (SAMPLES_FILE, SAMPLE_COLUMNS))
# What a run folder holds of its own: no command's output may be written over one of them.
RUN_FILES = (RESULTS_FILE, PROCESSES_FILE, SAMPLES_FILE, META_FILE, WORKER_LOG)


def run_file_problem(path: Path) -> str | None:
    """Why ``path`` must not be written: it is, or links to, one of a run folder's own files (a
    folder with a results.csv or a meta.json), which a report, a budget or a page written over
    it would destroy; None otherwise. The path is resolved first, links and ``..`` included
    (``RUN/new/../results.csv`` is RUN's results.csv, though ``new`` does not exist yet)."""
    for where in dict.fromkeys((path, Path(os.path.realpath(path)))):
        folder = where.parent
        if where.name in RUN_FILES and ((folder / RESULTS_FILE).is_file() or (folder / META_FILE).is_file()):
            return f"it is {where.name} of the run folder {str(folder)!r}; linbench never writes over a run's files"
    return None


class RunStore:
    """results.csv, samples.csv and meta.json of one run folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repairs: list[str] = []  # one line per file whose rows a repair dropped

    @classmethod
    def create(cls, out_dir: Path, name: str) -> RunStore:
        """A new folder ``out_dir/<UTC timestamp>-<name>`` with the CSV headers written."""
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{utc_stamp()}-{name}"
        path, n = out_dir / stem, 1
        while path.exists():
            n += 1
            path = out_dir / f"{stem}-{n}"
        path.mkdir()
        try:
            return cls.create_at(path)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)  # a folder with half its files is no run
            raise

    @classmethod
    def create_at(cls, path: Path) -> RunStore:
        """A run at exactly ``path`` (made if missing; it may hold other files, not a run):
        the CSV headers written. FileExistsError when it already holds a run."""
        path.mkdir(parents=True, exist_ok=True)
        taken = [file for file, _ in FILES if (path / file).exists()]
        if taken:
            raise FileExistsError(f"{path / taken[0]} exists: {path} already holds a run")
        for file, columns in FILES:
            (path / file).write_text(_csv_text([columns]))
        return cls(path)

    @classmethod
    def open(cls, path: Path, repair: bool = True) -> RunStore:
        """An existing run folder, repaired for appending (left as it is without ``repair``)."""
        for file in (RESULTS_FILE, META_FILE):
            if not (path / file).is_file():
                raise RunStoreError(f"{str(path)!r} is not a linbench run folder (no {file})")
        if not (path / SAMPLES_FILE).is_file():
            raise RunStoreError(
                f"{str(path)!r} has no {SAMPLES_FILE}: it cannot be resumed without the samples of its finished "
                "points; start a new run"
            )
        store = cls(path)
        store.read_meta()  # a run from a newer schema is refused before anything is repaired
        if repair:
            store._repair()
        return store

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def samples_path(self) -> Path:
        return self.path / SAMPLES_FILE

    @property
    def processes_path(self) -> Path:
        return self.path / PROCESSES_FILE

    @property
    def log_path(self) -> Path:
        return self.path / WORKER_LOG

    def append(self, row: Mapping[str, Any]) -> None:
        """Write one point's result row (UnknownColumnError for a column results.csv lacks)."""
        values = checked(row, RESULT_COLUMNS, RESULTS_FILE)
        _append_text(self.results_path, _csv_text([[cell(v) for v in values.values()]]))

    def append_process(self, row: Mapping[str, Any], samples_ms: Iterable[float] = ()) -> None:
        """Write one process's row and its repetitions (samples first, so a process row never
        lacks its samples)."""
        values = checked(row, PROCESS_COLUMNS, PROCESSES_FILE)
        samples = list(samples_ms)
        if samples:
            head = [*(values[column] for column in KEY_COLUMNS), values["process"]]
            _append_text(self.samples_path, _csv_text([*head, f"{s:.6g}"] for s in samples))
        _append_text(self.processes_path, _csv_text([[cell(v) for v in values.values()]]))

    def replace_rows(
        self,
        results: Iterable[Mapping[str, Any]],
        processes: Iterable[Mapping[str, Any]] = (),
        samples: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        """Replace results.csv, processes.csv and samples.csv whole, each atomically, every row
        checked against its file's columns and written as ``append`` writes it (UnknownColumnError
        for a column a file lacks): a run made of other runs' rows (``linbench merge``)."""
        texts = [  # every row checked before any file is replaced
            _csv_text([columns, *([cell(v) for v in checked(row, columns, file).values()] for row in rows)])
            for (file, columns), rows in zip(FILES, (results, processes, samples), strict=True)
        ]
        for (file, _), text in zip(FILES, texts, strict=True):
            _replace_text(self.path / file, text)

    def rows(self) -> list[dict[str, Any]]:
        """The result rows, typed (rows.typed: ``causal`` is True, ``time_ms`` 42.5, an empty
        cell None), in file order."""
        return read_typed(self.results_path)

    def process_rows(self) -> list[dict[str, Any]]:
        """The process rows, typed as ``rows`` are, in file order (none for a run from before
        processes.csv)."""
        return read_typed(self.processes_path) if self.processes_path.exists() else []

    def done_keys(self) -> set[tuple[str, ...]]:
        """The key (record.row_key) of every point with a results row."""
        return {row_key(row) for row in self.rows()}

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        """Replace meta.json atomically (a kill or a full disk mid-write leaves the old one)."""
        _replace_text(self.path / META_FILE, json.dumps(meta, indent=2, default=str) + "\n")

    def update_meta(self, sections: Mapping[str, Any]) -> None:
        """Replace these top-level keys of meta.json (made when there is none yet)."""
        meta = self.read_meta() if (self.path / META_FILE).is_file() else {}
        self.write_meta(meta | dict(sections))

    def read_meta(self) -> dict[str, Any]:
        """meta.json; RunStoreError when it is missing, cannot be read or is not a JSON object,
        NewerRunError when a newer schema wrote it."""
        try:
            return read_meta_json(self.path / META_FILE)
        except MetaFileError as exc:
            raise RunStoreError(str(exc)) from None
        except NewerSchemaError as exc:
            raise NewerRunError(str(exc)) from None

    def _repair(self) -> None:
        redo = self._drop_bad_rows(self.results_path)
        for path in (self.processes_path, self.samples_path):
            self._drop_bad_rows(path, redo)
        self._upgrade_header(self.results_path, RESULT_COLUMNS)
        self._upgrade_header(self.samples_path, SAMPLE_COLUMNS, fill={"process": "0"})
        if not self.processes_path.exists():  # a run from before processes.csv
            _replace_text(self.processes_path, _csv_text([PROCESS_COLUMNS]))
        self._upgrade_header(self.processes_path, PROCESS_COLUMNS)
        # Samples belong to a process row or to a finished point (runs from before processes.csv).
        processes = {_process_key(row) for row in self.process_rows()}
        done = self.done_keys()
        kept = [
            [row[column] for column in SAMPLE_COLUMNS]
            for row in _read_rows(self.samples_path)
            if _process_key(row) in processes or row_key(row) in done
        ]
        _replace_text(self.samples_path, _csv_text([SAMPLE_COLUMNS, *kept]))

    def _drop_bad_rows(self, path: Path, points: set[tuple[str, ...]] | None = None) -> set[tuple[str, ...]]:
        """Rewrite ``path`` without the rows no writer finished (rows.py), and without the rows
        of ``points``; the keys of the points whose rows were dropped as bad."""
        if not path.exists():
            return set()
        try:
            read = read_rows(path)
        except UnreadableFileError as exc:  # no kill leaves one: nothing is cut, the run is refused
            raise RunStoreError(f"{exc}; the run is left as it is") from None
        except CsvFileError:
            _drop_partial_line(path)  # a header cut short: the header upgrade rewrites it
            return set()
        points = points or set()
        kept = [row for row in read.rows if row_key(row) not in points] if points else read.rows
        if not read.bad and len(kept) == len(read.rows):
            return set()
        if read.bad:
            self.repairs.append(_repair_line(read))
        _replace_text(path, _csv_text([read.header, *([row[c] for c in read.header] for row in kept)]))
        return {bad.key for bad in read.bad if bad.key is not None}

    def _upgrade_header(self, path: Path, columns: tuple[str, ...], fill: Mapping[str, str] | None = None) -> None:
        """Rewrite a file from before a column was added with today's columns, so rows appended
        now land under their names (the added cells of old rows stay empty, or ``fill``)."""
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) == columns:
                return
            rows = list(reader)
        defaults = dict(fill or {})
        cells = [[row.get(column) or defaults.get(column, "") for column in columns] for row in rows]
        _replace_text(path, _csv_text([columns, *cells]))


def _read_rows(path: Path) -> list[dict[str, str]]:
    """The whole rows of ``path`` (rows.py: a torn or malformed row is never data)."""
    return read_rows(path).rows


def _repair_line(read: CsvRows) -> str:
    return read.warning("dropped from the file; their points are measured again") or ""


def _drop_partial_line(path: Path) -> None:
    """Cut a file back to its last complete line (a kill can stop a write mid-line)."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        try:
            with path.open("r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)
        except OSError as exc:
            raise RunStoreWriteError(path, exc) from exc
