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


def test_a_runs_processes_read_back_typed_and_are_none_where_absent(tmp_path: Path) -> None:
    from synthetic_processes import write_process_run

    folder = write_process_run(tmp_path / "new", [row(1024, time_ms=2.0)], offsets=(0.0, 0.1, -0.1))
    processes = read_run(folder).processes
    assert processes is not None and list(processes["process"]) == [0, 1, 2]
    assert processes["time_ms"].tolist() == pytest.approx([2.0, 2.0 * 1.10517, 2.0 * 0.904837], rel=1e-5)
    assert processes["seq"].tolist() == [1024] * 3 and processes["causal"].tolist() == [True] * 3
    assert read_run(make_run(tmp_path / "old", [row(1024)])).processes is None  # none recorded
    (folder / "processes.csv").write_text("")  # a run stopped before its first process
    assert read_run(folder).processes is None


def test_garbage_in_processes_csv_is_named(tmp_path: Path) -> None:
    from synthetic_processes import write_process_run

    folder = write_process_run(tmp_path / "run", [row(1024)])
    path = folder / "processes.csv"
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace(",ok,", ",fine,")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReportInputError, match=r"processes\.csv.*unknown status 'fine'"):
        read_run(folder)
    path.write_text("variant,impl\ncosine,chunked\n")
    with pytest.raises(ReportInputError, match=r"processes\.csv' lacks column"):
        read_run(folder)
