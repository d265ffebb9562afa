"""The between-run term (CPU, synthetic runs): two runs measured apart differ by a shift of the
whole run and a scatter of their points that their processes cannot see. Taken out and added
in, unchanged code shifted by the machine is no regression, a planted +30% on one point still
is, and a whole run that moved with nothing to say why is inconclusive."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from synthetic_processes import QUIET, write_process_run
from synthetic_runs import series

from linbench.gate.between import between_runs
from linbench.gate.compare import Thresholds, compare_runs
from linbench.report.load import read_run

SEQS = (1024, 2048, 4096)
# A CPU suite of 9 points whose processes agree (5 each, within 0.4%).
SUITE = [
    row
    for variant, impl, ms in (("cosine", "kernel", 0.01), ("cosine", "chunked", 0.05), ("softmax", "sdpa", 0.02))
    for row in series(variant, impl, lambda s, ms=ms: ms * s, seqs=SEQS)
]
# What each point of a second back-to-back run moved: a whole-run shift of +3% and a scatter of
# a few percent around it (host state that lasts minutes), unseen by either run's processes.
SCATTER = (0.01, -0.02, 0.035, 0.0, -0.01, 0.02, 0.045, -0.03, 0.005)


def _moved(shift: float, planted: dict[int, float] | None = None) -> list[dict]:
    rows = []
    for index, row in enumerate(SUITE):
        factor = math.exp(shift + SCATTER[index]) * (planted or {}).get(index, 1.0)
        rows.append(row | {c: row[c] * factor for c in ("time_ms", "time_ms_p20", "time_ms_p80")})
    return rows


def _compare(tmp_path: Path, cur: list[dict], thresholds: Thresholds | None = None):
    base = read_run(write_process_run(tmp_path / "base", SUITE, QUIET))
    current = read_run(write_process_run(tmp_path / "cur", cur, QUIET))
    return compare_runs(base, current, thresholds or Thresholds())


def test_a_run_shifted_by_the_machine_is_no_regression(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _moved(0.03))
    # The point that moved most (+7.8%) passes the 5% floor, but not the run's own shift and scatter.
    assert max(p.ratio for p in comparison.points) == pytest.approx(math.exp(0.075), rel=1e-4)
    between = comparison.between
    assert between is not None and between.shift == pytest.approx(0.035, abs=1e-3) and between.source == "every point"
    assert between.scatter == pytest.approx(1.4826 * 0.015, abs=1e-3)
    assert comparison.verdict == "pass" and {p.time_verdict for p in comparison.points} == {"same"}


@pytest.mark.parametrize("index", range(9))
def test_a_planted_30_percent_on_any_single_point_is_still_caught(tmp_path: Path, index: int) -> None:
    comparison = _compare(tmp_path, _moved(0.03, {index: 1.3}))
    assert comparison.verdict == "regression"
    assert [i for i, p in enumerate(comparison.points) if p.time_verdict == "regression"] == [index]


def test_a_whole_run_that_moved_past_the_floor_is_inconclusive_without_controls(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _moved(0.07))
    assert comparison.run_moved and comparison.verdict == "inconclusive" and not comparison.failed
    # Controls that moved with it say the machine changed (exit 3), as the drift check does.
    controls = _compare(tmp_path / "controls", _moved(0.07), Thresholds(controls=("softmax:sdpa",)))
    assert controls.between.source == "controls" and not controls.run_moved
    assert controls.verdict == "environment changed"


def test_the_two_sides_of_one_ab_have_no_between_run_term(tmp_path: Path) -> None:
    base = read_run(write_process_run(tmp_path / "base", SUITE, QUIET))
    cur = read_run(write_process_run(tmp_path / "cur", _moved(0.03), QUIET))
    base.meta["ab"], cur.meta["ab"] = {"side": "baseline"}, {"side": "current"}
    comparison = compare_runs(base, cur, Thresholds())
    assert comparison.between is None and comparison.failed  # +7.8% on a quiet point is past the floor


def test_fewer_than_five_points_have_no_between_run_term(tmp_path: Path) -> None:
    base = read_run(write_process_run(tmp_path / "base", SUITE[:4], QUIET))
    cur = read_run(write_process_run(tmp_path / "cur", _moved(0.0)[:4], QUIET))
    assert between_runs(compare_runs(base, cur, Thresholds()).points, ()) is None


def test_the_output_says_what_the_whole_run_moved(tmp_path: Path) -> None:
    from linbench.gate.render import between_lines, verdict_line

    moved = _compare(tmp_path, _moved(0.07))
    (line,) = between_lines(moved)
    assert line.startswith("runs measured apart: the whole current run moved +7.8% (every point's median, 9 points)")
    assert verdict_line(moved).endswith("; the whole run moved +7.8%")
    assert verdict_line(moved).startswith("INCONCLUSIVE: 9 points compared: 9 same")


@pytest.mark.parametrize("index", [4, 5])
def test_a_planted_30_percent_on_one_of_two_control_points_is_caught(tmp_path: Path, index: int) -> None:
    """One control that moved on its own is its impl's change, not the machine's: neither the
    drift check (environment changed, which excuses time regressions) nor the run's shift may
    rest on it. With two controls the median is their mean, which the planted one would carry."""
    rows = [row for row in SUITE if row["seq"] != 4096]  # cosine:kernel, cosine:chunked, softmax:sdpa at 1k, 2k
    cur = [row | {c: row[c] * 1.01 * (1.3 if i == index else 1.0) for c in ("time_ms", "time_ms_p20", "time_ms_p80")}
           for i, row in enumerate(rows)]  # fmt: skip
    base = read_run(write_process_run(tmp_path / "base", rows, QUIET))
    comparison = compare_runs(base, read_run(write_process_run(tmp_path / "cur", cur, QUIET)),
                              Thresholds(controls=("softmax:sdpa",)))  # fmt: skip
    assert comparison.between is not None and comparison.between.source == "controls"
    assert comparison.drift is not None and not comparison.drift.changed
    assert [i for i, p in enumerate(comparison.points) if p.time_verdict == "regression"] == [index]
    assert comparison.failed and comparison.verdict == "regression"
