"""The history file: rows appended once per run, read back as they were written, and a file of
a newer schema refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_runs import write_history

from linbench.history.observations import of_folders
from linbench.history.store import COLUMNS, HISTORY_SCHEMA, HistoryFileError, add, read


@pytest.mark.parametrize("name", ["history.csv", "history.csv.gz"])
def test_rows_read_back_as_written_and_a_run_is_added_once(tmp_path: Path, name: str) -> None:
    runs = write_history(tmp_path / "runs", 2)
    observations = of_folders(runs)
    store = tmp_path / name
    assert add(store, observations[: len(observations) // 2]) == (len(observations) // 2, [])
    added, skipped = add(store, observations)  # the first run again, and the second
    assert added == len(observations) - len(observations) // 2
    assert skipped == [runs[0].name]
    assert sorted(read(store), key=repr) == sorted(observations, key=repr)


def test_a_newer_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    store = tmp_path / "history.csv"
    add(store, of_folders(write_history(tmp_path / "runs", 1)))
    text = store.read_text().splitlines()
    text[1] = str(HISTORY_SCHEMA + 98) + text[1][text[1].index(",") :]
    store.write_text("\n".join(text) + "\n")
    with pytest.raises(
        HistoryFileError, match=rf"history schema {HISTORY_SCHEMA + 98}; this linbench reads up to {HISTORY_SCHEMA}"
    ):
        read(store)


def test_a_file_of_other_columns_takes_no_rows(tmp_path: Path) -> None:
    store = tmp_path / "history.csv"
    store.write_text(",".join(reversed(COLUMNS)) + "\n")
    with pytest.raises(HistoryFileError, match="other columns"):
        add(store, of_folders(write_history(tmp_path / "runs", 1)))
