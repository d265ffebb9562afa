"""docs/results-columns.md is generated from the schema's declarations and agrees with them (CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.results import schema, schema_docs

PAGE = Path(__file__).parents[2] / "docs" / "results-columns.md"


def test_the_committed_column_reference_is_what_the_schema_generates() -> None:
    assert PAGE.read_text() == schema_docs.render(), (
        f"{PAGE.relative_to(PAGE.parents[1])} disagrees with linbench/results/schema.py; "
        f"regenerate it from the repository root with: {schema_docs.COMMAND}"
    )


def _rows(page: str, file: str) -> dict[str, list[str]]:
    """The table under ``## file``: each row's cells, by column name."""
    section = page.split(f"## {file}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| `")]
    return {cells[0].strip(" `"): [cell.strip() for cell in cells[1:]] for cells in rows}


@pytest.mark.parametrize(
    ("file", "columns"),
    [
        ("results.csv", schema.RESULT_COLUMNS),
        ("processes.csv", schema.PROCESS_COLUMNS),
        ("samples.csv", schema.SAMPLE_COLUMNS),
    ],
)
def test_each_file_s_table_lists_its_columns_in_order_with_kind_and_doc(file: str, columns: tuple[str, ...]) -> None:
    rows = _rows(schema_docs.render(), file)
    assert tuple(rows) == columns
    for name, cells in rows.items():
        assert cells[:2] == [schema.COLUMNS[name].kind.__name__, schema.COLUMNS[name].doc]


def test_results_csv_s_table_marks_the_columns_a_reader_requires() -> None:
    rows = _rows(schema_docs.render(), "results.csv")
    assert tuple(name for name, cells in rows.items() if cells[2] == "yes") == schema.REQUIRED_RESULT_COLUMNS


def test_the_entry_point_writes_the_page_or_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "columns.md"
    assert schema_docs.main([str(page)]) == 0
    assert page.read_text() == schema_docs.render()
    assert schema_docs.main([]) == 0
    assert capsys.readouterr().out == schema_docs.render()


def test_bad_usage_is_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert schema_docs.main(["a.md", "b.md"]) == 2
    assert schema_docs.main(["--check"]) == 2
    assert schema_docs.main([str(tmp_path / "missing" / "columns.md")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and all(line.startswith("schema_docs: error: ") for line in lines)


def test_the_history_has_every_version_up_to_the_one_written() -> None:
    """schema.py's comment lines name every version from 2 up to SCHEMA_VERSION: a version
    raised without its line fails here, and the page lists the version written."""
    versions = [version for version, _ in schema_docs.history()]
    assert versions == list(range(2, schema.SCHEMA_VERSION + 1))
    assert all(change for _, change in schema_docs.history())
    assert f"- {schema.SCHEMA_VERSION}: " in PAGE.read_text()


def test_a_version_s_lines_in_either_spelling_are_joined(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    source = tmp_path / "schema.py"
    source.write_text("# 2: one column.\n# schema 2: another\n# 3: a third\nSCHEMA_VERSION = 3\n# 4: not history\n")
    monkeypatch.setattr(schema, "__file__", str(source))
    assert schema_docs.history() == [(2, "one column; another"), (3, "a third")]
