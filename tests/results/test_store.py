"""Run folders: rows appended and flushed one by one, and repaired after a kill."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from result_rows import process_row
from result_rows import result_row as row

from linbench.results.schema import (
    PROCESS_COLUMNS,
    REQUIRED_KEY_COLUMNS,
    RESULT_COLUMNS,
    SAMPLE_COLUMNS,
    SCHEMA_VERSION,
    UnknownColumnError,
)
from linbench.results.store import RunStore, RunStoreError


def _samples(store: RunStore) -> list[dict[str, str]]:
    with store.samples_path.open() as handle:
        return list(csv.DictReader(handle))


def test_a_new_run_folder_has_headers_and_rows_are_readable_at_once(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "cosine")
    assert store.path.parent == tmp_path and store.path.name.endswith("-cosine")
    store.append_process(process_row(256, 0), [1.5, 1.6])
    store.append(row(256))
    with store.results_path.open() as handle:
        assert tuple(next(csv.reader(handle))) == RESULT_COLUMNS
    with store.processes_path.open() as handle:
        assert tuple(next(csv.reader(handle))) == PROCESS_COLUMNS
    # Read back typed (rows.typed): numbers as numbers, a flag as a bool.
    assert [(r["seq"], r["causal"]) for r in store.rows()] == [(256, True)]
    assert [(r["seq"], r["process"], r["pid"]) for r in store.process_rows()] == [(256, 0, 1000)]
    samples = _samples(store)
    assert tuple(samples[0]) == SAMPLE_COLUMNS
    assert [(s["process"], s["time_ms"]) for s in samples] == [("0", "1.5"), ("0", "1.6")]


def test_a_misspelt_column_is_an_error_not_an_empty_cell(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "cosine")
    with pytest.raises(UnknownColumnError, match="time_msec"):
        store.append(row(256) | {"time_msec": 1.0})
    with pytest.raises(UnknownColumnError, match="tokens_per_s"):
        store.append_process(process_row(256, 0) | {"tokens_per_s": 1.0})  # a results-only column
    with pytest.raises(ValueError, match="not a status"):
        store.append(row(256, status="fine"))
    assert store.rows() == [] and store.process_rows() == []


def test_two_runs_in_the_same_second_get_two_folders(tmp_path: Path) -> None:
    assert RunStore.create(tmp_path, "x").path != RunStore.create(tmp_path, "x").path


def test_reopening_drops_a_half_written_line_and_orphan_samples(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    for seq, ms in ((256, 1.0), (512, 2.0)):
        store.append_process(process_row(seq, 0, ms), [ms])
        store.append(row(seq, time_ms=ms))
    # A kill after the samples of the third point's process but in the middle of its row:
    with store.samples_path.open("a") as handle:
        handle.write("cosine,chunked,fwd,True,fp32,cpu,1,8,1024,64,64,0,3.0\n")
    with store.processes_path.open("a") as handle:
        handle.write("cosine,chunked,fwd,True,fp32,cp")
    reopened = RunStore.open(store.path)
    assert [r["seq"] for r in reopened.process_rows()] == [256, 512]
    assert [s["seq"] for s in _samples(reopened)] == ["256", "512"]
    reopened.append_process(process_row(1024, 0, 3.0), [3.0])
    reopened.append(row(1024, time_ms=3.0))
    assert [r["seq"] for r in reopened.rows()] == [256, 512, 1024]


def test_the_processes_of_an_unfinished_point_survive_a_reopening(tmp_path: Path) -> None:
    """A point measured in 5 processes whose run was killed after 2 keeps them: a resumed run
    measures only the 3 it lacks (nothing measured is lost)."""
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    for process in (0, 1):
        store.append_process(process_row(256, process), [1.0, 1.1])
    reopened = RunStore.open(store.path)
    assert reopened.rows() == []
    assert [r["process"] for r in reopened.process_rows()] == [0, 1]
    assert len(_samples(reopened)) == 4


def test_a_folder_without_results_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(RunStoreError, match="not a linbench run folder"):
        RunStore.open(tmp_path)


def test_resuming_a_run_from_before_the_decode_columns_keeps_rows_aligned(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    store.append(row(256))
    old_columns = RESULT_COLUMNS[: RESULT_COLUMNS.index("context")]
    with store.results_path.open() as handle:
        rows = list(csv.DictReader(handle))
    with store.results_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, old_columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    reopened = RunStore.open(store.path)
    reopened.append(row(512))
    assert [(r["seq"], r["status"], r["context"]) for r in reopened.rows()] == [(256, "ok", None), (512, "ok", None)]


def test_resuming_a_run_from_before_processes_keeps_its_samples(tmp_path: Path) -> None:
    """Schema 1 had no processes.csv and no process column in samples.csv: a resumed old run
    gets both, and the samples of its finished points are kept as process 0."""
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    store.append(row(256))
    store.processes_path.unlink()
    key = "cosine,chunked,fwd,True,fp32,cpu,1,8,256,64,64"
    old_header = ",".join((*REQUIRED_KEY_COLUMNS, "time_ms"))  # schema 1: no process, kv_heads or chunk
    store.samples_path.write_text(f"{old_header}\n{key},1.5\n")
    reopened = RunStore.open(store.path)
    assert [(s["seq"], s["process"], s["time_ms"]) for s in _samples(reopened)] == [("256", "0", "1.5")]
    assert reopened.process_rows() == []
    reopened.append_process(process_row(512, 0), [2.0])
    assert [r["seq"] for r in reopened.process_rows()] == [512]


def test_reopening_drops_a_torn_and_a_malformed_result_row_with_their_processes(tmp_path: Path) -> None:
    """The points of a torn last row and of a malformed middle row are measured again: their
    rows, processes and samples go, the repair says so in one line, the rest stays."""
    from torn_rows import garble_row, tear_last_row

    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    for seq, ms in ((256, 1.0), (512, 2.0), (1024, 42.5)):
        store.append_process(process_row(seq, 0, ms), [ms])
        store.append(row(seq, time_ms=ms))
    garble_row(store.results_path, 2)  # 256
    tear_last_row(store.results_path)  # 1024: "...,ok,4"
    reopened = RunStore.open(store.path)
    assert [r["seq"] for r in reopened.rows()] == [512]
    assert [r["seq"] for r in reopened.process_rows()] == [512]
    assert [s["seq"] for s in _samples(reopened)] == ["512"]
    (repair,) = reopened.repairs
    assert "results.csv" in repair and "line 2 " in repair and "line 4 is torn" in repair and "\n" not in repair
    assert reopened.results_path.read_bytes().endswith(b"\r\n")
    assert RunStore.open(store.path).repairs == []  # repaired once, whole after


def test_replace_rows_writes_whole_files_each_row_checked(tmp_path: Path) -> None:
    store = RunStore.create_at(tmp_path / "run")
    store.append(row(64))
    store.replace_rows([row(128), row(256)], [process_row(128, 0)])
    assert [r["seq"] for r in store.rows()] == [128, 256]  # the earlier row replaced, not kept
    assert [r["seq"] for r in store.process_rows()] == [128] and _samples(store) == []
    with pytest.raises(UnknownColumnError, match=r"processes\.csv has no column 'nope'"):
        store.replace_rows([row(512)], [process_row(512, 0) | {"nope": 1}])
    assert [r["seq"] for r in store.rows()] == [128, 256]  # a refused write leaves the files as they were


def test_a_run_from_a_newer_schema_is_refused_before_it_is_repaired(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run", "schema_version": SCHEMA_VERSION + 1})
    torn = "cosine,chunked,fwd,True,fp32,cp"
    with store.results_path.open("a") as handle:
        handle.write(torn)
    with pytest.raises(RunStoreError, match=f"schema version {SCHEMA_VERSION + 1};.* up to {SCHEMA_VERSION}"):
        RunStore.open(store.path)
    assert store.results_path.read_text().endswith(torn)  # left as it was
    store.write_meta({"command": "linbench run", "schema_version": 1})  # an older one reads
    assert RunStore.open(store.path).read_meta()["schema_version"] == 1


@pytest.mark.parametrize("file", ["results.csv", "samples.csv"])
def test_a_file_that_is_not_text_is_refused_on_resume_and_left_as_it_is(tmp_path: Path, file: str) -> None:
    """Defect: a results.csv that was not UTF-8 had its tail cut by the repair of torn lines,
    then the resume failed: no kill leaves such a file, so nothing may be cut."""
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    store.append(row(256, time_ms=1.0))
    path = store.path / file
    damaged = path.read_bytes() + b"\x9a\xff not text, in a line a line end closes\r\n"
    path.write_bytes(damaged)
    with pytest.raises(RunStoreError, match=r"is not a linbench results CSV.*; the run is left as it is"):
        RunStore.open(store.path)
    assert path.read_bytes() == damaged


def test_a_row_cut_inside_a_character_is_a_torn_row_repaired_on_resume(tmp_path: Path) -> None:
    """A kill can stop a write inside a multi-byte character (an error cell's ≥): that last
    line is torn, as a cut anywhere else in it is, and the resume cuts it back."""
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    store.append(row(256, time_ms=1.0))
    store.append(row(512, status="error", time_ms=None) | {"error": "rel_err ≥ tolerance"})
    data = store.results_path.read_bytes()
    cut = data[: data.index("≥".encode()) + 1]  # the first byte of three
    store.results_path.write_bytes(cut)
    reopened = RunStore.open(store.path)
    assert [r["seq"] for r in reopened.rows()] == [256]
    assert reopened.repairs and "is torn" in reopened.repairs[0]
