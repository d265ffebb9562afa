"""Run folders: rows appended and flushed one by one, and repaired after a kill."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from result_rows import result_row as row

from linbench.results.schema import RESULT_COLUMNS, SAMPLE_COLUMNS
from linbench.results.store import RunStore, RunStoreError


def test_a_new_run_folder_has_headers_and_rows_are_readable_at_once(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "cosine")
    assert store.path.parent == tmp_path and store.path.name.endswith("-cosine")
    store.append(row(256), [1.5, 1.6])
    with store.results_path.open() as handle:
        assert tuple(next(csv.reader(handle))) == RESULT_COLUMNS
    assert [r["seq"] for r in store.rows()] == ["256"]
    with store.samples_path.open() as handle:
        samples = list(csv.DictReader(handle))
    assert tuple(samples[0]) == SAMPLE_COLUMNS and [s["time_ms"] for s in samples] == ["1.5", "1.6"]


def test_two_runs_in_the_same_second_get_two_folders(tmp_path: Path) -> None:
    assert RunStore.create(tmp_path, "x").path != RunStore.create(tmp_path, "x").path


def test_reopening_drops_a_half_written_line_and_orphan_samples(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "cosine")
    store.write_meta({"command": "linbench run"})
    store.append(row(256), [1.0])
    store.append(row(512), [2.0])
    # A kill after the samples of the third point but in the middle of its row:
    with store.samples_path.open("a") as handle:
        handle.write("cosine,chunked,fwd,True,fp32,cpu,1,8,1024,64,64,3.0\n")
    with store.results_path.open("a") as handle:
        handle.write("cosine,chunked,fwd,True,fp32,cp")
    reopened = RunStore.open(store.path)
    assert [r["seq"] for r in reopened.rows()] == ["256", "512"]
    with reopened.samples_path.open() as handle:
        assert [s["seq"] for s in csv.DictReader(handle)] == ["256", "512"]
    reopened.append(row(1024), [3.0])
    assert [r["seq"] for r in reopened.rows()] == ["256", "512", "1024"]


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
    assert [(r["seq"], r["status"], r["context"]) for r in reopened.rows()] == [("256", "ok", ""), ("512", "ok", "")]
