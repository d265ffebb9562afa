"""The results schema is declared once: every column of every file has a type and a meaning."""

from __future__ import annotations

from linbench.results.schema import (
    COLUMNS,
    KEY_COLUMNS,
    PROCESS_COLUMNS,
    REQUIRED_RESULT_COLUMNS,
    RESULT_COLUMNS,
    SAMPLE_COLUMNS,
)


def test_every_column_of_every_file_is_declared_once_with_a_meaning() -> None:
    for columns in (RESULT_COLUMNS, PROCESS_COLUMNS, SAMPLE_COLUMNS):
        assert len(set(columns)) == len(columns)
        assert set(columns) <= set(COLUMNS)
        assert columns[: len(KEY_COLUMNS)] == KEY_COLUMNS or columns is RESULT_COLUMNS
    assert all(column.doc and column.kind in (str, int, float, bool) for column in COLUMNS.values())
    assert set(COLUMNS) == set(RESULT_COLUMNS) | set(PROCESS_COLUMNS) | set(SAMPLE_COLUMNS)


def test_results_columns_keep_the_order_old_runs_were_written_in() -> None:
    """Readers of schema-1 runs rely on the first columns; new ones only ever go at the end."""
    assert REQUIRED_RESULT_COLUMNS[-1] == "error" and RESULT_COLUMNS[6] == "device_name"
    assert RESULT_COLUMNS.index("tokens_per_s") < RESULT_COLUMNS.index("processes")


def test_results_and_report_modules_take_column_names_from_results_not_from_the_sweep() -> None:
    """Column names and modes live in linbench/results; the reports read them there."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "linbench"
    offenders = [
        str(path.relative_to(root))
        for folder in ("results", "report")
        for path in sorted((root / folder).glob("*.py"))
        if "linbench.sweep.points" in path.read_text() or "linbench.sweep.spec" in path.read_text()
    ]
    assert offenders == []
