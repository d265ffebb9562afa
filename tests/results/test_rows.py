"""Reading a run file back row by row: a torn or malformed row is named and never data (CPU only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from result_rows import result_row as row
from torn_rows import garble_row, tear_last_row

from linbench.results.rows import CsvFileError, UnreadableFileError, as_read, is_set, read_rows, read_typed, typed
from linbench.results.store import RunStore


def _results(tmp_path: Path, times: list[float]) -> Path:
    store = RunStore.create(tmp_path, "rows")
    for n, time_ms in enumerate(times):
        store.append(row(1024 << n, time_ms=time_ms))
    return store.results_path


def test_whole_rows_read_back_and_no_warning(tmp_path: Path) -> None:
    read = read_rows(_results(tmp_path, [1.5, 42.5]))
    assert [r["time_ms"] for r in read.rows] == ["1.5", "42.5"]
    assert read.bad == [] and read.warning() is None


def test_rows_are_typed_once_on_read_by_their_columns(tmp_path: Path) -> None:
    written = row(1024, time_ms=42.123456789) | {"oversubscribed": True, "cuda_graph": False}
    store = RunStore.create(tmp_path, "rows")
    store.append(written)
    (read,) = read_typed(store.results_path)
    assert (read["causal"], read["oversubscribed"], read["cuda_graph"]) == (True, True, False)
    assert (read["seq"], read["time_ms"], read["rel_err"]) == (1024, 42.1235, None)  # 6 digits, as written
    assert read["variant"] == "cosine" and read["chunk"] is None  # text stays text; empty is None
    # A row as written, as a reader gets it back: the same values, whichever way it came.
    assert as_read(written) == read == store.rows()[0]
    assert typed({"causal": "False", "undeclared": "7"}) == {"causal": False, "undeclared": "7"}


def test_a_flag_is_set_only_when_true() -> None:
    import numpy as np

    assert is_set(True) and is_set(np.True_)
    assert not any(is_set(flag) for flag in (False, np.False_, None, float("nan"), "True"))


def test_a_last_row_cut_mid_number_is_torn_and_left_out(tmp_path: Path) -> None:
    path = _results(tmp_path, [1.5, 42.5])
    torn = tear_last_row(path)
    assert torn.endswith(",ok,4")
    read = read_rows(path)
    assert [r["time_ms"] for r in read.rows] == ["1.5"]
    (bad,) = read.bad
    assert bad.line == 3 and "torn" in bad.reason
    # Cut after the key: the key reads, so a resumed run knows which point to measure again.
    assert bad.key is not None and bad.key[8] == "2048"
    warning = read.warning()
    assert warning is not None and "\n" not in warning
    assert str(path) in warning and "line 3" in warning


def test_a_torn_row_whose_cells_are_all_there_is_still_torn(tmp_path: Path) -> None:
    path = _results(tmp_path, [1.5, 42.5])
    path.write_bytes(path.read_bytes().removesuffix(b"\r\n"))  # only the line end is missing
    read = read_rows(path)
    assert len(read.rows) == 1 and "torn" in read.bad[0].reason


def test_a_torn_key_is_not_trusted(tmp_path: Path) -> None:
    path = _results(tmp_path, [1.5, 42.5])
    text = path.read_text()
    path.write_text(text[: text.rindex("2048") + 2])  # "2048" cut to "20": another point's key
    assert read_rows(path).bad[0].key is None


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("time_ms", "4x2", "time_ms '4x2', not a number"),
        ("status", "fine", "status 'fine'"),
        ("causal", "yes", "causal 'yes', not True or False"),
        ("seq", "0", "not a positive whole number"),
        ("seq", "1.5", "seq '1.5', not a whole number"),
        ("impl", "", "has no impl"),
        # a time no figure's log axis can take: an edit, never a measurement
        ("time_ms", "inf", "time_ms 'inf', not a time"),
        ("time_ms", "0", "time_ms '0', not a time"),
        ("time_ms", "-1", "time_ms '-1', not a time"),
    ],
)
def test_a_malformed_middle_row_is_left_out_with_its_reason(
    tmp_path: Path, column: str, value: str, reason: str
) -> None:
    path = _results(tmp_path, [1.5, 2.5, 3.5])
    garble_row(path, 3, column, value)
    read = read_rows(path)
    assert [r["time_ms"] for r in read.rows] == ["1.5", "3.5"]
    (bad,) = read.bad
    assert bad.line == 3 and reason in bad.reason


def test_a_row_with_cells_missing_or_extra_is_left_out(tmp_path: Path) -> None:
    path = _results(tmp_path, [1.5, 2.5, 3.5])
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace(",", ",,", 1)  # one cell too many
    lines[2] = lines[2].split(",ok,")[0] + "\r\n"  # cut, but with a line end (an edit)
    path.write_text("".join(lines))
    read = read_rows(path)
    assert [r["time_ms"] for r in read.rows] == ["3.5"]
    assert [b.line for b in read.bad] == [2, 3] and all("cells where the header has" in b.reason for b in read.bad)


def test_line_numbers_count_a_quoted_line_end(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "rows")
    store.append(row(1024, status="error", time_ms=None) | {"error": "two\nlines"})
    store.append(row(2048))
    garble_row(store.results_path, 3)
    assert [b.line for b in read_rows(store.results_path).bad] == [4]


def test_many_bad_rows_are_one_line_that_counts_the_rest(tmp_path: Path) -> None:
    path = _results(tmp_path, [1.0] * 6)
    for line in range(2, 8):
        garble_row(path, line)
    warning = read_rows(path).warning()
    assert warning is not None and "\n" not in warning
    assert "6 rows left out" in warning and "and 3 more" in warning


def test_an_empty_or_binary_file_is_no_csv(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_text("")
    with pytest.raises(CsvFileError, match="empty"):
        read_rows(path)
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UnreadableFileError, match="not a linbench results CSV"):
        read_rows(path)
    path.unlink()
    path.mkdir()  # a folder by the file's name: unreadable, as a permission would make it
    with pytest.raises(UnreadableFileError, match="cannot be read"):
        read_rows(path)
