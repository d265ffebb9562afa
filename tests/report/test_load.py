"""Reading run folders back, and refusing broken ones with the file and problem named."""

from __future__ import annotations

from pathlib import Path

import pytest
from result_rows import result_row as row
from torn_rows import garble_row, tear_last_row

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


def test_garbage_in_a_number_column_leaves_its_row_out_and_says_so(tmp_path: Path) -> None:
    folder = make_run(tmp_path, [row(1024), row(2048)])
    garble_row(folder / "results.csv", 2, "time_ms", "fast")
    run = read_run(folder)
    assert list(run.results["seq"]) == [2048]
    (warning,) = run.warnings
    assert "results.csv" in warning and "line 2" in warning and "time_ms 'fast'" in warning


def test_a_torn_last_row_and_a_malformed_middle_row_are_never_data(tmp_path: Path) -> None:
    from synthetic_processes import write_process_run

    rows = [row(1024, time_ms=1.5), row(2048, time_ms=9.5), row(4096, time_ms=42.5)]
    folder = write_process_run(tmp_path / "run", rows)
    assert tear_last_row(folder / "results.csv").endswith(",ok,4")  # 42.5 cut to 4
    garble_row(folder / "results.csv", 3, "peak_bytes", "lots")
    tear_last_row(folder / "processes.csv")
    run = read_run(folder)
    assert list(run.results["seq"]) == [1024]
    assert 4.0 not in set(run.results["time_ms"])
    assert run.processes is not None and len(run.processes) == len(rows) * 5 - 1
    assert len(run.warnings) == 2 and all("\n" not in line for line in run.warnings)
    assert "results.csv" in run.warnings[0] and "line 3" in run.warnings[0] and "line 4" in run.warnings[0]
    assert "processes.csv" in run.warnings[1] and "torn" in run.warnings[1]


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
    run = read_run(folder)
    assert run.processes is not None and len(run.processes) == len(lines) - 2
    assert "processes.csv" in run.warnings[0] and "status 'fine'" in run.warnings[0]
    path.write_text("variant,impl\ncosine,chunked\n")
    with pytest.raises(ReportInputError, match=r"processes\.csv' lacks column"):
        read_run(folder)
