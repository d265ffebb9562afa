"""A torn last row and a malformed middle row: every reader (report, plot, compare, a resumed
run) says so in one stderr line naming the file and line, and never uses the row (CPU only)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import Invoke
from synthetic_processes import write_process_run
from synthetic_runs import series
from torn_rows import garble_row, tear_last_row

from linbench.results.rows import read_rows

SMALL = ("--heads", "2", "--dim", "16", "--budget-s", "0.05", "--warmup-s", "0", "--device", "cpu")
# results.csv: softmax 1k..16k on lines 2-6, cosine 1k..16k on lines 7-11; cosine 16k (16.384
# ms) is the last row, torn to "1" ms, and softmax 2k's time (line 3) is garbled.
TORN_LINE, GARBLED_LINE = 11, 3


def _rows() -> list[dict]:
    return series("softmax", "sdpa", lambda s: (s / 1000) ** 2) + series("cosine", "chunked", lambda s: s / 1000)


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """A whole run, and the same run with a torn last row and a garbled middle row."""
    whole = write_process_run(tmp_path / "whole", _rows())
    damaged = tmp_path / "damaged" / whole.name
    shutil.copytree(whole, damaged)
    garble_row(damaged / "results.csv", GARBLED_LINE)  # rewrites the file: before the tear
    assert tear_last_row(damaged / "results.csv").endswith(",ok,1")
    return whole, damaged


def _one_warning(stderr: str, folder: Path) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    (line,) = lines
    assert line.startswith("warning: ") and str(folder / "results.csv") in line
    assert f"line {GARBLED_LINE} " in line and f"line {TORN_LINE} is torn" in line
    return line


def test_report_warns_once_and_fits_without_the_torn_row(invoke: Invoke, runs: tuple[Path, Path]) -> None:
    _, damaged = runs
    result = invoke("report", damaged, "--json")
    assert result.exit_code == 0, result.output
    _one_warning(result.stderr, damaged)
    fits = json.loads(result.stdout)["fits"]
    cosine = next(f for f in fits if f["impl"] == "chunked" and f["metric"] == "time" and f["axis"] == "seq")
    assert cosine["exponent"] == pytest.approx(1.0, abs=0.01)  # 1 ms at 16k would make it ~0.3


def test_plot_warns_once_and_never_draws_the_torn_row(
    invoke: Invoke, runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from linbench.report import plot

    _, damaged = runs
    drawn = []
    real = plot.plot_run
    monkeypatch.setattr(plot, "plot_run", lambda run, *args: drawn.append(run.results.copy()) or real(run, *args))
    result = invoke("plot", damaged)
    assert result.exit_code == 0, result.output
    _one_warning(result.stderr, damaged)
    (results,) = drawn
    cosine = results[results["variant"] == "cosine"]
    assert list(cosine["seq"]) == [1024, 2048, 4096, 8192] and 1.0 not in set(cosine["time_ms"])
    assert 2048 not in set(results[results["variant"] == "softmax"]["seq"])
    assert list((damaged / "plots").glob("*.png"))


def test_compare_warns_once_and_leaves_the_torn_point_unmatched(invoke: Invoke, runs: tuple[Path, Path]) -> None:
    whole, damaged = runs
    result = invoke("compare", whole, damaged, "--json")
    _one_warning(result.stderr, damaged)
    report = json.loads(result.stdout)
    left_out = {(p["variant"], p["seq"]) for p in report["baseline_only"]}
    assert left_out == {("cosine", 16384), ("softmax", 2048)}
    compared = {(p["variant"], p["seq"]) for p in report["points"]}
    assert ("cosine", 16384) not in compared and len(compared) == 8


def test_resume_measures_the_torn_and_the_malformed_point_again(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--variant", "cosine:chunked", "--no-against", "--seq", "64,128,256", *SMALL, "--quiet")
    assert invoke(*args, "--out", tmp_path).exit_code == 0
    (folder,) = tmp_path.iterdir()
    results = folder / "results.csv"
    garble_row(results, 2)  # seq 64
    tear_last_row(results)  # seq 256
    resumed = invoke("run", "--resume", folder, "--quiet")
    assert resumed.exit_code == 0, resumed.output
    lines = [line for line in resumed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(results) in lines[0] and "line 2 " in lines[0] and "line 4 is torn" in lines[0]
    read = read_rows(results)
    assert read.bad == []
    assert sorted(int(row["seq"]) for row in read.rows) == [64, 128, 256]
    assert {row["status"] for row in read.rows} == {"ok"}
    # Measured again from scratch: the point's processes are the new ones alone.
    with (folder / "processes.csv").open(newline="") as handle:
        processes = list(csv.DictReader(handle))
    for row in read.rows:
        mine = [p for p in processes if p["seq"] == row["seq"]]
        assert len(mine) == int(row["processes"]) and [p["process"] for p in mine] == [str(n) for n in range(len(mine))]
