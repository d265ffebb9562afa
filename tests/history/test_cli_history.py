"""``linbench history`` end to end on copies of a committed run with the measured between-run noise
added (history_runs.py): a planted +25% step is named with its commit and fails with --recent;
unchanged copies pass; three copies are insufficient data; a budget of bad input is one line.
No device: the runs are copies, not measured."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from history_runs import commit, write_history
from torn_rows import tear_last_row
from typer.testing import CliRunner, Result

from linbench.cli import app

# Looked up, not imported: Otava's import (numpy, scipy) would cost every test worker's
# collection a second; the tests import it when they run.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)

POINT = ("gated-deltanet", "chunked", "2048")


def _history(*args: object) -> Result:
    return CliRunner().invoke(app, ["history", *map(str, args)])


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stepped")
    write_history(root, 30, seed=0, step=1.25, step_from=20, point=POINT)
    return root


def test_a_step_is_named_at_its_first_run_and_fails_when_recent(stepped: Path, tmp_path: Path) -> None:
    page = tmp_path / "history.html"
    result = _history(stepped, "--recent", "12", "--min-magnitude", "10%", "--html", page)
    assert result.exit_code == 1, result.output
    named = [line for line in result.output.splitlines() if "regression (recent)" in line]
    assert named and all(line.strip().startswith("gated-deltanet:chunked") and "S2048" in line for line in named)
    assert all(f"commit {commit(20)[:12]}" in line for line in named)
    assert page.read_text().count("<img") == len(named)
    # Its evidence sufficed from run 26 on (4.7% noise): reported then, old news 3 runs later.
    assert _history(stepped, "--recent", "3", "--min-magnitude", "10%").exit_code == 0


def test_unchanged_copies_pass_with_no_change(tmp_path: Path) -> None:
    write_history(tmp_path, 30, seed=0)
    result = _history(tmp_path, "--recent", "12", "--min-magnitude", "10%", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["series"] == []


def test_three_copies_are_insufficient_data(tmp_path: Path) -> None:
    write_history(tmp_path, 3, seed=0)
    result = _history(tmp_path)
    assert result.exit_code == 4, result.output
    assert "insufficient data: 3 run(s) in all, 5 needed" in result.output


def test_a_run_given_twice_counts_once(tmp_path: Path) -> None:
    """Defect: the same three runs given twice (or as folders beside the history file holding
    them) were judged as six nights, and insufficient data became a pass."""
    runs = tmp_path / "runs"
    write_history(runs, 3, seed=0)
    store = tmp_path / "history.csv"
    for run in sorted(runs.iterdir()):
        assert _history("--store", store, "--add", run).exit_code == 4
    for args in ((runs, runs), (store, runs), (store, store)):
        result = _history(*args)
        assert result.exit_code == 4, result.output
        assert "insufficient data: 3 run(s) in all, 5 needed" in result.output
        assert "3 run(s) given more than once, each counted once" in result.stderr
    assert json.loads(_history(runs, runs, "--json").stdout)  # the notice stays out of the JSON


def test_a_history_file_grows_by_add_and_is_judged_alone(stepped: Path, tmp_path: Path) -> None:
    store = tmp_path / "history.csv.gz"
    first = sorted(stepped.iterdir())[0]
    assert _history("--store", store, "--add", first).exit_code == 4  # one run: insufficient
    again = _history("--store", store, "--add", stepped, "--recent", "12", "--min-magnitude", "10%")
    assert f"{first.name}: already in {store}, skipped" in again.output
    judged = _history(store, "--recent", "12", "--min-magnitude", "10%")
    assert judged.exit_code == 1 and f"commit {commit(20)[:12]}" in judged.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--add", "x"], "--add needs --store FILE"),
        ([], "give run folders or history files"),
        (["missing-folder"], "does not exist"),
        (["x", "--max-pvalue", "2"], "--max-pvalue '2' is not below 1"),
        (["x", "--max-pvalue", "0"], "--max-pvalue '0' must be a number above 0 (for example 0.01)"),
        # it said "the runs given hold no point with a time"
        (["--store", "no-such-history.csv"], "--store 'no-such-history.csv' does not exist; make it with"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = _history(*args)
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("file", ["results.csv", "processes.csv"])
def test_a_run_with_a_torn_row_is_refused_naming_its_file_and_line(tmp_path: Path, file: str) -> None:
    runs = write_history(tmp_path / "runs", 3, seed=0, variants=("gated-deltanet",))
    damaged = runs[1] / file
    tear_last_row(damaged)
    lines = damaged.read_text().count("\n") + 1
    for args in ([tmp_path / "runs"], ["--store", tmp_path / "h.csv", "--add", tmp_path / "runs"]):
        result = _history(*args)
        assert result.exit_code == 2, result.output
        (line,) = result.output.strip().splitlines()
        assert str(damaged) in line and f"line {lines} is torn" in line and "history takes only whole runs" in line
    assert not (tmp_path / "h.csv").exists()  # nothing appended from a damaged run


def test_a_torn_history_file_is_refused_and_never_appended_to(tmp_path: Path) -> None:
    runs = write_history(tmp_path / "runs", 3, seed=0, variants=("gated-deltanet",))
    store = tmp_path / "history.csv"
    assert _history("--store", store, "--add", runs[0]).exit_code == 4
    store.write_text(store.read_text()[:-20])  # a kill mid-append
    before = store.read_text()
    for args in ([store], ["--store", store, "--add", runs[1]]):
        result = _history(*args)
        assert result.exit_code == 2 and "its last row is torn" in result.output, result.output
    assert store.read_text() == before


def test_runs_judged_beside_a_store_not_made_yet_are_judged(stepped: Path, tmp_path: Path) -> None:
    """A nightly job's first night: the runs are judged; the store not there yet is no error."""
    result = _history(stepped, "--store", tmp_path / "not-yet.csv.gz", "--recent", "12", "--min-magnitude", "10%")
    assert result.exit_code == 1 and f"commit {commit(20)[:12]}" in result.output
