"""``linbench run --only-points``: a sweep measures just the points a CSV names (CPU, real
workers at tiny sizes), records them for --resume, and refuses a list it cannot use."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from cli_helpers import Invoke, assert_usage_error

from linbench.results.point_list import write_point_list
from linbench.results.record import row_key
from linbench.runner.pipeline import prepare

CPU = ("--device", "cpu")
SWEEP = ("--variant", "cosine:chunked", "--against", "softmax:sdpa", "--seq", "64,128", "--heads", "2", "--dim", "16")
TINY = (*SWEEP, "--budget-s", "0.05", "--warmup-s", "0", *CPU)


def _rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_only_the_points_named_are_measured_and_a_resume_keeps_to_them(invoke: Invoke, tmp_path: Path) -> None:
    first = invoke("run", *TINY, "--out", tmp_path / "all")
    assert first.exit_code == 0, first.output
    (folder,) = (tmp_path / "all").iterdir()
    wanted = [row for row in _rows(folder) if row["impl"] == "sdpa" and row["seq"] == "128"]
    points = tmp_path / "points.csv"
    with points.open("w", newline="") as handle:  # rows of a results.csv: a list of points
        writer = csv.DictWriter(handle, fieldnames=list(wanted[0]))
        writer.writeheader()
        writer.writerows(wanted)
    result = invoke("run", *TINY, "--only-points", points, "--out", tmp_path / "some")
    assert result.exit_code == 0, result.output
    assert "1 of 4 points to run" in result.output
    (some,) = (tmp_path / "some").iterdir()
    assert [(row["impl"], row["seq"], row["status"]) for row in _rows(some)] == [("sdpa", "128", "ok")]
    meta = json.loads((some / "meta.json").read_text())
    assert [row_key(point) for point in meta["only_points"]] == [row_key(wanted[0])]
    # A resume of it measures the points it was started with, not the rest of the sweep.
    (some / "results.csv").write_text((some / "results.csv").read_text().splitlines()[0] + "\n")
    assert [p.key for p in prepare(resume=some, repair=False).pending] == [row_key(wanted[0])]


def test_a_point_the_sweep_lacks_is_refused_before_anything_runs(invoke: Invoke, tmp_path: Path) -> None:
    # seq 4096: not a length of this sweep
    stray = ("cosine", "chunked", "fwd", "True", "fp32", "cpu", "1", "2", "4096", "16", "16", "2", "", "2", "", "", "")
    points = write_point_list(tmp_path / "points.csv", [stray])
    result = invoke("run", *TINY, "--only-points", points, "--out", tmp_path / "out")
    assert_usage_error(result, "1 of the 1 points asked for are not in the sweep as planned here", "4096")
    assert not (tmp_path / "out").exists()


def test_a_list_that_cannot_be_read_or_a_resume_with_one_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    missing = invoke("run", *TINY, "--only-points", tmp_path / "missing.csv", "--out", tmp_path / "out")
    assert_usage_error(missing, "missing.csv: cannot read it")
    (tmp_path / "run").mkdir()
    resumed = invoke("run", "--resume", tmp_path / "run", "--only-points", tmp_path / "missing.csv")
    assert_usage_error(resumed, "--resume measures the points the run was started with; drop --only-points")


def test_no_check_measures_without_the_correctness_check(invoke: Invoke, tmp_path: Path) -> None:
    """linbench ab's rounds after the first: the points are measured, no check runs before them."""
    result = invoke("run", *TINY, "--no-check", "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "run").iterdir()
    assert {(row["status"], row["rel_err"], row["check_seq"]) for row in _rows(folder)} == {("ok", "", "")}
    assert json.loads((folder / "meta.json").read_text())["overhead"]["gates"] == 0
