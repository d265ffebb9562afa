"""``linbench compare`` on real run folders of one small CPU sweep.

Timings of two back-to-back runs on a shared machine differ by tens of percent (whole runs
move together with the host's load, see docs/ci.md on noisy CPUs). The gate judges a point by
the spread between its worker processes, and two runs measured apart by what each point moved
beyond the run's median shift, with the points' scatter around it added to their noise: so
noise can make a point ``noisy`` (too noisy to judge: the comparison is then inconclusive, exit
4), but unchanged code is never a regression. That is the gate's headline property, and the
first test asserts it: exit 0 or 4, never 1 (a false alarm fails it). The runs' workers take one
torch thread each and are judged on their CPU time, as in the CPU recipe. A run made without
several processes per point is ``unverified`` for time: inconclusive, never a pass. Whether
the gate passes and fails when it should is asserted deterministically: below on copies of a
real run folder whose processes are made to agree (then one point, or every point, scaled by
1.3), and on synthetic runs in tests/gate/ and tests/cli/test_cli_compare.py.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from cli_helpers import linbench_argv

# A CPU test: pinned, so that a machine with a GPU does not time the sweep on CUDA.
SWEEP = ["--variant", "softmax:sdpa", "--no-against", "--seq", "512,1k,2k", "--heads", "2,4", "--dim", "32"]
# Three processes per point (the fewest the gate judges), no more, and short timings: the
# test's time stays bounded. What it asserts holds for any timings.
RUN = [*SWEEP, "--device", "cpu", "--threads", "1", "--budget-s", "0.05", "--warmup-s", "0.05", "--processes", "3"]
RUN += ["--max-processes", "3", "-q"]
# Six points: enough (gate/between.py MIN_POINTS) to measure what a whole run moved.
POINTS = 6
KEY = ("variant", "impl", "mode", "causal", "dtype", "device", "batch", "heads", "seq", "dim_k", "dim_v")
TIME_COLUMNS = {
    "results.csv": (
        *("time_ms", "time_ms_p20", "time_ms_p80", "time_ms_proc_lo", "time_ms_proc_hi", "device_ms", "cpu_ms_p20"),
    ),
    "processes.csv": ("time_ms", "time_ms_p20", "time_ms_p80", "device_ms", "cpu_ms_p20", "paced_p20"),
    "samples.csv": ("time_ms",),
}
# What two ok points can be called on timing alone, noise and the machine's load included (a
# point whose threads other processes oversubscribed, or that took other threads by the idle
# cores, is not judged).
UNJUDGED = {"noisy", "unverified", "oversubscribed", "other threads"}
TIMING_VERDICTS = {"faster", "same", "slower", "regression", *UNJUDGED}
# The fewest processes per point on both sides for the gate to judge time.
JUDGED = 3


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


def _processes_per_point(run: Path) -> int:
    """The fewest worker processes that measured a point of ``run`` (0 without processes.csv)."""
    path = run / "processes.csv"
    if not path.is_file() or not path.stat().st_size:
        return 0
    counts = Counter(tuple(row[c] for c in KEY) for row in _read(path) if row["status"] == "ok")
    return min(counts.values(), default=0)


def _settled_copy(run: Path, to: Path, factor: float = 1.0, only: int | None = None) -> Path:
    """A copy of ``run`` whose processes all agree, every time × ``factor`` (only the point of
    row ``only`` of results.csv, where given): each process of a point gets the point's median.
    Judged against another such copy, a point's noise is 0, so its verdict is decided by the
    thresholds alone, whatever noise (or load: no point stays oversubscribed) the real run
    recorded."""
    shutil.copytree(run, to)
    keys = [tuple(row[c] for c in KEY) for row in _read(run / "results.csv")]
    medians = {tuple(row[c] for c in KEY): float(row["time_ms"]) for row in _read(run / "results.csv")}
    for name, columns in TIME_COLUMNS.items():
        table = _read(to / name)
        for row in table:
            key = tuple(row[c] for c in KEY)
            scale = factor if only is None or key == keys[only] else 1.0
            for column in columns:
                if row.get(column):
                    value = medians[key] if name == "processes.csv" else float(row[column])
                    row[column] = repr(value * scale)
            if row.get("oversubscribed"):  # settled: as if no other process had shared the cores
                row["oversubscribed"] = "False"
        with (to / name).open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)
    return to


@pytest.mark.extended
def test_two_back_to_back_runs_of_unchanged_code_compare_every_point_and_raise_no_false_alarm(
    runs: tuple[Path, Path],
) -> None:
    baseline, current = runs
    result = _compare(baseline, current, "--json")
    # 0 (pass) or 4 (inconclusive: a point too noisy to judge, or the whole run moved); never 1
    # (a false alarm on unchanged code), 2, 3 (no controls are named) or a crash.
    assert result.returncode in (0, 4), result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["baseline_only"] == [] and report["current_only"] == []
    points = report["points"]
    assert len(points) == POINTS, points
    for point in points:
        assert point["base_status"] == point["status"] == "ok", point
        assert point["time_verdict"] in TIMING_VERDICTS, point
        # CPU peak RSS moves by allocator pages between identical runs, under the gate's floor.
        assert point["memory_verdict"] != "regression", point
    assert not [point for point in points if point["time_verdict"] == "regression"], points
    assert report["verdict"] in ("pass", "inconclusive")
    unjudged = [point for point in points if point["time_verdict"] in UNJUDGED]
    assert report["exit_status"] == result.returncode
    assert result.returncode != 4 or (bool(unjudged) and report["verdict"] == "inconclusive")


@pytest.mark.extended
def test_the_gate_passes_a_real_run_against_itself_and_fails_it_slowed(runs: tuple[Path, Path], tmp_path: Path) -> None:
    baseline, _ = runs
    assert _processes_per_point(baseline) == JUDGED
    same = _compare(baseline, baseline)
    # A run against itself: ratio 1 everywhere, so never a regression; passed only where
    # every point's processes agreed well enough to be judged (noise decides which).
    assert same.returncode in (0, 4), same.stdout + same.stderr
    verdict = "PASS" if same.returncode == 0 else "INCONCLUSIVE"
    assert f"{verdict}: {POINTS} points compared" in same.stdout, same.stdout

    settled = _settled_copy(baseline, tmp_path / "settled")
    again = _compare(settled, _settled_copy(baseline, tmp_path / "again"), "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert {point["time_verdict"] for point in json.loads(again.stdout)["points"]} == {"same"}

    slowed = _compare(settled, _settled_copy(baseline, tmp_path / "slowed", factor=1.3, only=2), "--json")
    assert slowed.returncode == 1, slowed.stdout + slowed.stderr
    report = json.loads(slowed.stdout)
    assert report["verdict"] == "regression"
    assert [point["time_verdict"] for point in report["points"]] == ["same"] * 2 + ["regression"] + ["same"] * (
        POINTS - 3
    )
    assert {point["memory_verdict"] for point in report["points"]} == {"same"}
    # Every point 1.3x: the whole run moved, and runs measured apart cannot tell the machine
    # from a change to every impl.
    moved = _compare(settled, _settled_copy(baseline, tmp_path / "moved", factor=1.3), "--json")
    assert moved.returncode == 4 and json.loads(moved.stdout)["run_moved"], moved.stdout + moved.stderr
