"""``linbench compare`` on real run folders of one small CPU sweep.

Timings of two back-to-back runs on a shared machine differ by tens of percent (whole runs
move together with the host's load, see the README on noisy CPUs), and no threshold tells
that from a regression. So the test of two real runs asserts only what noise cannot
produce: the comparison runs, pairs every point, finds every point ok on both sides, and
fails (exit 1) only on a timing verdict. Whether the gate passes and fails when it should is
asserted deterministically: below on a real run folder whose times are scaled, and on
synthetic runs in tests/report/test_compare.py and tests/cli/test_cli_reports.py.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import linbench_argv

# A CPU test: pinned, so that a machine with a GPU does not time the sweep on CUDA.
SWEEP = ["--variant", "softmax:sdpa", "--no-baseline", "--seq", "1k..4k", "--heads", "4,8", "--dim", "32"]
RUN = [*SWEEP, "--device", "cpu", "--budget-s", "0.5", "-q"]
POINTS = 6
TIME_COLUMNS = {"results.csv": ("time_ms", "time_ms_p20", "time_ms_p80"), "samples.csv": ("time_ms",)}
# What two ok points can be called on timing alone, noise included.
TIMING_VERDICTS = {"faster", "same", "slower", "regression"}


def _run(out: Path) -> Path:
    result = subprocess.run(linbench_argv("run", *RUN, "--out", out), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    (folder,) = out.iterdir()
    return folder


def _compare(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(linbench_argv("compare", *args), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two back-to-back runs of the sweep: (baseline, current)."""
    out = tmp_path_factory.mktemp("compare-real")
    return _run(out / "baseline"), _run(out / "current")


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _slowed_copy(run: Path, to: Path) -> Path:
    """A copy of ``run`` whose every time is scaled far past the run's own spread: each
    point's p20 lands at twice the largest p80 of the run, whatever noise it recorded."""
    rows = _read(run / "results.csv")
    spread = max(float(row["time_ms_p80"]) / float(row["time_ms_p20"]) for row in rows)
    factor = 2 * spread
    shutil.copytree(run, to)
    for name, columns in TIME_COLUMNS.items():
        table = _read(to / name)
        for row in table:
            for column in columns:
                row[column] = repr(float(row[column]) * factor)
        with (to / name).open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)
    return to


def test_two_back_to_back_runs_compare_every_point_and_differ_only_in_time(runs: tuple[Path, Path]) -> None:
    baseline, current = runs
    result = _compare(baseline, current, "--json")
    # 0 (pass) or 1 (a timing regression, which noise alone can produce); never 2 or a crash.
    assert result.returncode in (0, 1), result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["baseline_only"] == [] and report["current_only"] == []
    points = report["points"]
    assert len(points) == POINTS, points
    for point in points:
        assert point["base_status"] == point["status"] == "ok", point
        assert point["time_verdict"] in TIMING_VERDICTS, point
        # CPU peak RSS moves by allocator pages between identical runs, under the gate's floor.
        assert point["memory_verdict"] != "regression", point
    timing_regressions = [point for point in points if point["time_verdict"] == "regression"]
    assert (result.returncode == 1) == bool(timing_regressions) == (report["verdict"] == "regression")


def test_the_gate_passes_a_real_run_against_itself_and_fails_it_slowed(runs: tuple[Path, Path], tmp_path: Path) -> None:
    baseline, _ = runs
    same = _compare(baseline, baseline)
    assert same.returncode == 0, same.stdout + same.stderr
    assert f"PASS: {POINTS} points compared" in same.stdout, same.stdout

    slowed = _compare(baseline, _slowed_copy(baseline, tmp_path / baseline.name), "--json")
    assert slowed.returncode == 1, slowed.stdout + slowed.stderr
    report = json.loads(slowed.stdout)
    assert report["verdict"] == "regression"
    assert [point["time_verdict"] for point in report["points"]] == ["regression"] * POINTS
    assert {point["memory_verdict"] for point in report["points"]} == {"same"}
