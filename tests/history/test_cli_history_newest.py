"""``linbench history`` judges the newest run given, whatever its points' statuses (CPU; copies of
a committed CPU run, no timing): points ok before and oom in it are a regression, named; a newest
run whose points all crashed, added with --add, is the newest run reported; points it has no row
for are inconclusive, named; runs with no ok point at all are bad input."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from history_runs import edit_rows, ended, write_history
from typer.testing import CliRunner, Result

from linbench.cli import app

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)


def _history(*args: object) -> Result:
    return CliRunner().invoke(app, ["history", *map(str, args)])


def test_points_oom_in_the_newest_run_are_a_regression_named(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 8, variants=("softmax",))
    edit_rows(runs[-1], lambda index, row: ended("oom")(row) if index < 4 else row)
    result = _history(tmp_path, "--min-magnitude", "30%")
    assert result.exit_code == 1, result.output
    assert f"newest {runs[-1].name})" in result.output.splitlines()[0]
    assert "4 series: broken in the newest run, ok before: oom: softmax:sdpa" in result.output
    assert "4 broken in the newest run" in result.output.splitlines()[-1]


def test_a_newest_run_all_crashed_added_to_a_store_is_the_newest_run(tmp_path: Path) -> None:
    runs = write_history(tmp_path / "runs", 8, variants=("softmax",))
    edit_rows(runs[-1], lambda _, row: ended("crashed")(row))
    store = tmp_path / "history.csv.gz"
    for run in runs[:-1]:
        assert _history("--store", store, "--add", run).exit_code in (0, 4)
    result = _history("--store", store, "--add", runs[-1], "--json")
    assert result.exit_code == 1, result.output
    judged = json.loads(result.output[result.output.index("{") :])
    assert judged["newest"] == runs[-1].name and judged["runs"][-1] == runs[-1].name
    assert {s["broken"] for s in judged["series"]} == {"crashed"} and len(judged["series"]) == judged["series_count"]


def test_points_the_newest_run_has_no_row_for_are_inconclusive_named(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 8, variants=("softmax",))
    edit_rows(runs[-1], lambda index, row: None if index < 2 else row)
    result = _history(tmp_path, "--min-magnitude", "30%")
    assert result.exit_code == 4, result.output
    assert "  2 series: not measured in the newest run (it has no row for the point" in result.output


def test_runs_with_no_ok_point_are_bad_input(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 2, variants=("softmax",))
    for run in runs:
        edit_rows(run, lambda _, row: ended("oom")(row))
    result = _history(tmp_path)
    assert result.exit_code == 2 and "the runs given hold no point with a time" in result.output
