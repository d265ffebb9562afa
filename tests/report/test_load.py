"""Reading run folders back, and refusing broken ones with the file and problem named."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from result_rows import result_row as row

from linbench.report.load import ReportInputError, find_run_dirs, read_run
from linbench.results.schema import RESULT_COLUMNS
from linbench.results.store import RunStore


def make_run(tmp: Path, rows: list[dict]) -> Path:
    store = RunStore.create(tmp, "test")
    store.write_meta({"device_name": "test"})
    for each in rows:
        store.append(each)
    return store.path


def test_a_run_reads_back_typed(tmp_path: Path) -> None:
    folder = make_run(tmp_path, [row(1024), row(2048, status="oom", time_ms=None)])
    run = read_run(folder)
    assert run.meta == {"device_name": "test"}
    assert list(run.results["seq"]) == [1024, 2048]
    assert run.results["causal"].tolist() == [True, True]
    assert run.results["time_ms"].isna().tolist() == [False, True]


def test_run_folders_are_found_from_a_file_a_folder_or_a_folder_of_runs(tmp_path: Path) -> None:
    first = make_run(tmp_path, [row(1024)])
    second = make_run(tmp_path, [row(1024)])
    assert find_run_dirs(first / "results.csv") == [first]
    assert find_run_dirs(first) == [first]
    assert find_run_dirs(tmp_path) == sorted([first, second])


def rewrite(folder: Path, text: str) -> Path:
    (folder / "results.csv").write_text(text)
    return folder


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not a linbench results CSV"),
        ("a,b\n1,2\n", "lacks column"),
        (",".join(RESULT_COLUMNS) + "\n", "holds no results"),
    ],
)
def test_broken_files_are_named_with_their_problem(tmp_path: Path, text: str, message: str) -> None:
    folder = rewrite(make_run(tmp_path, []), text)
    with pytest.raises(ReportInputError, match=message) as info:
        read_run(folder)
    assert "results.csv" in str(info.value)


def test_garbage_in_a_number_column_is_named(tmp_path: Path) -> None:
    folder = make_run(tmp_path, [row(1024)])
    with (folder / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    rows[0]["time_ms"] = "fast"
    with (folder / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, RESULT_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(ReportInputError, match="column time_ms holds 'fast' \\(row 2\\)"):
        read_run(folder)


def test_a_folder_without_runs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match=r"holds no results\.csv"):
        find_run_dirs(tmp_path)
    with pytest.raises(ReportInputError, match="does not exist"):
        find_run_dirs(tmp_path / "nope")
