"""``linbench.load_run``: a run folder's rows typed as every reader sees them, a DataFrame on
request, a newer schema refused (CPU only; a committed run and small written ones)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from result_rows import process_row, result_row
from torn_rows import tear_last_row

import linbench
from linbench.report.load import read_run
from linbench.results.schema import REQUIRED_RESULT_COLUMNS, RESULT_COLUMNS, SCHEMA_VERSION
from linbench.results.store import RunStore

COMMITTED = Path(__file__).parents[2] / "results" / "cpu-reference" / "20261124T060541Z-gated"


def test_a_committed_run_loads_as_typed_rows_and_a_frame() -> None:
    run = linbench.load_run(COMMITTED / "results.csv")  # the file names its folder
    assert run.path == COMMITTED and run.meta["schema_version"] <= SCHEMA_VERSION and run.left_out == []
    assert run.rows and all(isinstance(row["causal"], bool) and isinstance(row["seq"], int) for row in run.rows)
    assert all(isinstance(row["time_ms"], float) for row in run.rows if row["status"] == "ok")
    assert len(run.processes) >= len(run.rows) and isinstance(run.processes[0]["process"], int)
    frame = run.frame()
    assert list(frame.columns) == list(run.columns) and len(frame) == len(run.rows)
    assert frame["seq"].dtype.kind == "i" and frame["causal"].dtype == bool
    assert len(run.processes_frame()) == len(run.processes)


@pytest.mark.parametrize("name", ["meta.json", "worker.log", ""])
def test_another_file_or_an_empty_path_is_refused(name: str) -> None:
    """Defect: load_run('RUN/meta.json') loaded RUN, and '' the current folder."""
    with pytest.raises(ValueError, match="is a file, not a run folder" if name else "got ''"):
        linbench.load_run(str(COMMITTED / name) if name else "")


def test_a_torn_row_is_left_out_and_named(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "load")
    store.write_meta({"schema_version": SCHEMA_VERSION})
    for seq in (256, 512):
        store.append_process(process_row(seq, 0), [1.0])
        store.append(result_row(seq, time_ms=42.5))
    tear_last_row(store.results_path)
    run = linbench.load_run(store.path)
    assert [row["seq"] for row in run.rows] == [256] and [row["seq"] for row in run.processes] == [256, 512]
    (line,) = run.left_out
    assert "results.csv" in line and "line 3 is torn" in line


def test_a_run_from_a_newer_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "load")
    (store.path / "meta.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(
        ValueError, match=f"schema version 99; this linbench reads schema versions up to {SCHEMA_VERSION}"
    ):
        linbench.load_run(store.path)


def test_an_older_run_reads_a_column_it_predates_as_the_reports_do(tmp_path: Path) -> None:
    """A run from before kv_heads, v_heads, chunk and the serving key (only the columns every
    results.csv has had): each row has every column, kv_heads and v_heads as its heads (as
    ``report`` reads them), the rest None; the frame has them too."""
    folder = tmp_path / "old"
    folder.mkdir()
    row = result_row(256, time_ms=42.5)
    with (folder / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(REQUIRED_RESULT_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        writer.writerow(row)
    (folder / "meta.json").write_text(json.dumps({"schema_version": 1}))
    (loaded,) = linbench.load_run(folder).rows
    assert set(RESULT_COLUMNS) <= set(loaded)
    assert (loaded["kv_heads"], loaded["v_heads"]) == (8, 8)
    assert loaded["chunk"] is None and loaded["state_dtype"] is None and loaded["gqa"] is None
    assert loaded["time_ms"] == 42.5
    assert read_run(folder).results["kv_heads"].tolist() == [loaded["kv_heads"]]  # the report's reading
    assert linbench.load_run(folder).frame()["v_heads"].tolist() == [8]
