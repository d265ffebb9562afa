"""A list of points as a CSV of their key columns (--only-points): written and read back, a
results.csv read as one, and each way such a file can be wrong (no device: files only)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from result_rows import result_row
from torn_rows import garble_row, tear_last_row

from linbench.results.point_list import PointListError, read_point_list, write_point_list
from linbench.results.record import row_key
from linbench.results.store import RunStore

ONE, TWO = row_key(result_row(1024)), row_key(result_row(2048))


def test_points_written_are_the_points_read_back(tmp_path: Path) -> None:
    path = write_point_list(tmp_path / "points.csv", [TWO, ONE, TWO])
    assert read_point_list(path) == {ONE, TWO}
    assert len(path.read_text().splitlines()) == 3  # the header, then each point once


def test_a_results_csv_is_a_list_of_its_points(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "run")
    for seq in (1024, 2048):
        store.append(result_row(seq))
    assert read_point_list(store.results_path) == {ONE, TWO}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("variant,impl\ncosine,kernel\n", "not a list of points: no mode, causal"),
        ("", "not a list of points: no variant"),
    ],
)
def test_a_file_without_the_key_columns_is_refused_by_name(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "points.csv"
    path.write_text(text)
    with pytest.raises(PointListError, match=rf"points\.csv: {said}"):
        read_point_list(path)


def test_a_list_of_no_points_or_no_file_is_refused(tmp_path: Path) -> None:
    empty = write_point_list(tmp_path / "empty.csv", [])
    with pytest.raises(PointListError, match=r"empty\.csv: names no point"):
        read_point_list(empty)
    with pytest.raises(PointListError, match=r"missing\.csv: cannot read it: No such file"):
        read_point_list(tmp_path / "missing.csv")


@pytest.mark.parametrize("damage", ["torn", "garbled"])
def test_a_results_csv_with_a_row_no_writer_finished_is_refused_naming_the_line(tmp_path: Path, damage: str) -> None:
    store = RunStore.create(tmp_path, "run")
    for seq in (1024, 2048, 4096):
        store.append(result_row(seq))
    if damage == "torn":
        tear_last_row(store.results_path)  # 4096's row, cut in its time: its key still reads
        said = "1 row left out (line 4 is torn"
    else:
        garble_row(store.results_path, 3, column="seq")  # 2048's key cell
        said = "1 row left out (line 3 has seq '4x2'"
    with pytest.raises(PointListError, match=rf"results\.csv: {re.escape(said)}"):
        read_point_list(store.results_path)
