"""The drift check: when every control point moved the same way past --max-slowdown, the
machine changed, so time verdicts stop failing the gate while memory, launches and broken
points still do."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_processes import QUIET, planted, write_process_run
from synthetic_runs import scaled, series

from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.drift import ControlError
from linbench.report.load import read_run

GPU = {"device": "cuda:0", "device_name": "Test GPU"}
CONTROLS = Thresholds(controls=("softmax:sdpa",))


def _suite() -> list[dict]:
    kernel = series("cosine", "kernel", lambda s: 0.01 * s, seqs=(1024, 2048, 4096), **GPU)
    sdpa = series("softmax", "sdpa", lambda s: 1e-5 * s * s, seqs=(1024, 2048, 4096), **GPU)
    return kernel + sdpa


def _compare(tmp_path: Path, base: list[dict], cur: list[dict], thresholds: Thresholds, meta: dict | None = None):
    baseline = read_run(write_process_run(tmp_path / "base", base, QUIET))
    current = read_run(write_process_run(tmp_path / "cur", cur, QUIET, meta=meta))
    return compare_runs(baseline, current, thresholds)


def test_a_machine_10_percent_slower_everywhere_is_an_environment_change(tmp_path: Path) -> None:
    rows = _suite()
    comparison = _compare(tmp_path, rows, scaled(rows, time=1.10), CONTROLS)
    assert comparison.environment_changed and not comparison.failed
    assert comparison.verdict == "environment changed"
    # Each point is judged beyond what the controls moved (between.py): none moved more.
    assert comparison.count("same") == 6 and comparison.between.source == "controls"
    drift = comparison.drift
    assert drift is not None and drift.median_ratio == pytest.approx(1.10, rel=1e-4)
    assert [p.key["impl"] for p in drift.moved] == ["sdpa"] * 3


def test_memory_launches_and_broken_points_still_fail_when_the_environment_changed(tmp_path: Path) -> None:
    rows = _suite()
    grown = planted(scaled(rows, time=1.10), 0, peak_bytes=1.1)
    comparison = _compare(tmp_path, rows, grown, CONTROLS)
    assert comparison.environment_changed and comparison.failed and comparison.verdict == "regression"
    assert [p.memory_verdict for p in comparison.regressions] == ["regression"]


def test_controls_that_stayed_put_leave_a_regression_a_regression(tmp_path: Path) -> None:
    rows = _suite()
    comparison = _compare(tmp_path, rows, planted(rows, 0, time_ms=1.3), CONTROLS)
    assert not comparison.environment_changed and comparison.failed
    assert comparison.drift is not None and comparison.drift.median_ratio == pytest.approx(1.0)


def test_controls_that_moved_apart_are_no_drift(tmp_path: Path) -> None:
    rows = _suite()
    cur = planted(planted(planted(scaled(rows, time=1.2), 3, time_ms=0.7), 4, time_ms=0.7), 5, time_ms=1.0)
    comparison = _compare(tmp_path, rows, cur, CONTROLS)
    assert not comparison.environment_changed and comparison.failed


def test_a_suites_declared_controls_are_read_from_the_current_run(tmp_path: Path) -> None:
    rows = _suite()
    comparison = _compare(tmp_path, rows, scaled(rows, time=1.10), Thresholds(), meta={"controls": ["softmax:sdpa"]})
    assert comparison.environment_changed and comparison.drift is not None
    assert comparison.drift.controls == ("softmax:sdpa",)
    assert comparison.to_json()["verdict"] == "environment changed"


def test_no_controls_no_drift_check(tmp_path: Path) -> None:
    rows = _suite()
    comparison = _compare(tmp_path, rows, scaled(rows, time=1.10), Thresholds())
    # Every point moved 10%: the machine or a change to every impl, and nothing tells which.
    assert comparison.drift is None and comparison.run_moved and comparison.verdict == "inconclusive"


@pytest.mark.parametrize(("control", "message"), [("heinsen:kernel", "no point of it"), ("softmax", "VARIANT:IMPL")])
def test_a_control_that_is_absent_or_malformed_is_refused(tmp_path: Path, control: str, message: str) -> None:
    rows = _suite()
    with pytest.raises(ControlError, match=message):
        _compare(tmp_path, rows, rows, Thresholds(controls=(control,)))


def test_the_sides_of_an_ab_skip_the_declared_controls(tmp_path: Path) -> None:
    """An A/B measures both sides on one machine in one job: no environment lies between them."""
    rows = _suite()
    meta = {"controls": ["softmax:sdpa"]}
    base = read_run(write_process_run(tmp_path / "base", rows, QUIET))
    cur = read_run(write_process_run(tmp_path / "cur", scaled(rows, time=1.10), QUIET, meta=meta))
    base.meta["ab"], cur.meta["ab"] = {"side": "baseline"}, {"side": "current"}
    comparison = compare_runs(base, cur, Thresholds())
    # Nor any shift of the whole run: both sides shared it, round by round.
    assert comparison.drift is None and comparison.between is None and comparison.failed
