"""History files across schemas (CPU; copies of a committed CPU run, no timing): a schema 1 file
(ok points alone, no timing settings) is read as it is and rewritten in this schema's columns when
rows are added, its series unsplit; a point that was not ok keeps its status through the file."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest
from history_runs import edit_rows, ended, write_history

from linbench.history.observations import STATISTICS, of_folders
from linbench.history.series import build
from linbench.history.store import COLUMNS, COLUMNS_1, add, read


def _schema_1_file(path: Path, runs: list[Path]) -> None:
    """The rows of ``runs`` as linbench wrote them before schema 2."""
    rows = [{"history_schema": 1, **o.record()} for o in of_folders(runs)]
    text = open if path.suffix == ".csv" else gzip.open
    with text(path, "wt", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS_1, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize("name", ["history.csv", "history.csv.gz"])
def test_a_schema_1_file_is_read_and_rewritten_when_rows_are_added(tmp_path: Path, name: str) -> None:
    runs = write_history(tmp_path / "runs", 3, variants=("softmax",))
    store = tmp_path / name
    _schema_1_file(store, runs[:2])
    old = read(store)
    assert old and all(o.ok and o.environment.threads == "" and o.environment.cuda_graph == "" for o in old)
    assert add(store, of_folders(runs)) == (len(of_folders(runs[2:])), [runs[0].name, runs[1].name])
    opener = open if name.endswith(".csv") else gzip.open
    with opener(store, "rt", newline="") as handle:
        assert tuple(next(csv.reader(handle))) == COLUMNS
    again = read(store)
    assert [o.run for o in again] == [o.run for o in old] + [runs[2].name] * len(of_folders(runs[2:]))
    assert {o.environment.threads for o in again} == {"", "1"}
    assert all(len(s.segments) == 1 for s in build(again))  # unrecorded threads split nothing
    assert not list(tmp_path.glob("*.partial*"))


def test_a_point_that_was_not_ok_keeps_its_status_in_the_file(tmp_path: Path) -> None:
    runs = write_history(tmp_path / "runs", 2, variants=("softmax",))
    edit_rows(runs[1], lambda index, row: ended("oom")(row) if index == 0 else row)
    store = tmp_path / "history.csv.gz"
    add(store, of_folders(runs))
    (oom,) = [o for o in read(store) if not o.ok]
    assert oom.status == "oom" and oom.run == runs[1].name and all(oom.value(s) is None for s in STATISTICS)
    assert sorted(read(store), key=repr) == sorted(of_folders(runs), key=repr)
