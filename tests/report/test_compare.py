"""The regression gate: planted slowdowns, memory growth and a quadratic turn are caught;
noise and unchanged runs are not called regressions."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import failed, scaled, series, write_run

from linbench.report.compare import CompareError, Thresholds, check_same_device, compare_runs
from linbench.report.load import read_run

LINEAR = lambda s: 0.01 * s  # noqa: E731


def _runs(tmp_path: Path, base_rows: list[dict], cur_rows: list[dict]):
    base = read_run(write_run(tmp_path / "base", base_rows))
    cur = read_run(write_run(tmp_path / "cur", cur_rows))
    return base, cur


def _verdicts(comparison) -> set[str]:
    return {p.time_verdict for p in comparison.points}


def test_a_planted_20_percent_slowdown_is_a_regression(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    comparison = compare_runs(*_runs(tmp_path, rows, scaled(rows, time=1.2)), Thresholds())
    assert comparison.failed and _verdicts(comparison) == {"regression"}
    assert all(p.ratio == pytest.approx(1.2, rel=1e-3) for p in comparison.points)


def test_a_planted_10_percent_memory_growth_is_a_regression(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, peak_bytes=lambda s: 32768.0 * s)  # 32 MiB at 1k
    comparison = compare_runs(*_runs(tmp_path, rows, scaled(rows, memory=1.1)), Thresholds())
    assert comparison.failed and {p.memory_verdict for p in comparison.points} == {"regression"}
    assert _verdicts(comparison) == {"same"}


def test_an_identical_run_passes(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    comparison = compare_runs(*_runs(tmp_path, rows, rows), Thresholds())
    assert not comparison.failed and _verdicts(comparison) == {"same"}


def test_a_slowdown_inside_the_measured_noise_is_not_a_regression(tmp_path: Path) -> None:
    # 8% slower, but each run's p20–p80 spans ±10%: the intervals overlap.
    rows = series("cosine", "chunked", LINEAR, spread=0.10)
    comparison = compare_runs(*_runs(tmp_path, rows, scaled(rows, time=1.08)), Thresholds())
    assert not comparison.failed and _verdicts(comparison) == {"same"}
    # The noise is the gap the medians need before the intervals part: 10% + 10%.
    assert all(p.noise == pytest.approx(0.20, rel=1e-3) for p in comparison.points)


def test_a_measured_slowdown_under_the_threshold_is_slower_not_a_regression(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, spread=0.005)
    comparison = compare_runs(*_runs(tmp_path, rows, scaled(rows, time=1.03)), Thresholds())
    assert not comparison.failed and _verdicts(comparison) == {"slower"}
    faster = compare_runs(*_runs(tmp_path / "f", rows, scaled(rows, time=0.8)), Thresholds())
    assert _verdicts(faster) == {"faster"}


def test_memory_growth_under_the_cpu_floor_is_not_a_regression(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, peak_bytes=lambda s: 2_000_000.0)
    grown = scaled(rows, memory=1.3)  # +600 kB: within the allocator noise of CPU peak RSS
    assert not compare_runs(*_runs(tmp_path, rows, grown), Thresholds()).failed
    strict = Thresholds(memory_floor_bytes=0)
    assert compare_runs(*_runs(tmp_path / "strict", rows, grown), strict).failed


def test_a_point_that_was_ok_and_now_fails_is_a_regression(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024, 2048))
    broken = [rows[0], failed("cosine", "chunked", 2048, "mismatch")]
    comparison = compare_runs(*_runs(tmp_path, rows, broken), Thresholds())
    assert comparison.failed and [p.time_verdict for p in comparison.points] == ["same", "broken"]


def test_unmatched_points_are_listed_on_both_sides(tmp_path: Path) -> None:
    base = series("cosine", "chunked", LINEAR, seqs=(1024, 2048))
    cur = series("cosine", "chunked", LINEAR, seqs=(2048, 4096))
    comparison = compare_runs(*_runs(tmp_path, base, cur), Thresholds())
    assert [p["seq"] for p in comparison.baseline_only] == [1024]
    assert [p["seq"] for p in comparison.current_only] == [4096]
    assert len(comparison.points) == 1


def test_runs_with_no_common_point_cannot_be_compared(tmp_path: Path) -> None:
    base = series("cosine", "chunked", LINEAR, seqs=(1024,))
    cur = series("cosine", "chunked", LINEAR, seqs=(2048,))
    with pytest.raises(CompareError, match="no point in common"):
        compare_runs(*_runs(tmp_path, base, cur), Thresholds())


def test_runs_from_different_devices_are_refused(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    other = [{**row, "device_name": "Other CPU"} for row in rows]
    with pytest.raises(CompareError, match="different devices"):
        check_same_device(*_runs(tmp_path, rows, other))


def test_an_exponent_bound_catches_an_impl_turning_quadratic(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    turned = series("cosine", "chunked", lambda s: 1e-6 * s * s)
    bound = Thresholds(max_slowdown=1e9, max_exponents={"cosine:chunked": 1.2})
    comparison = compare_runs(*_runs(tmp_path, rows, turned), bound)
    (check,) = comparison.exponents
    assert check.exponent == pytest.approx(2.0, abs=0.05) and check.regressed and comparison.failed
    kept = compare_runs(*_runs(tmp_path / "kept", rows, rows), bound)
    assert not kept.failed and kept.exponents[0].exponent == pytest.approx(1.0, abs=0.05)


def test_an_exponent_bound_on_an_absent_variant_is_refused(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    with pytest.raises(CompareError, match="has no heinsen points"):
        compare_runs(*_runs(tmp_path, rows, rows), Thresholds(max_exponents={"heinsen": 1.2}))


def test_an_exponent_bound_still_holds_where_no_power_law_was_found(tmp_path: Path) -> None:
    from linbench.report.compare_render import exponent_table

    rows = series("cosine", "chunked", LINEAR)
    zigzag = series("cosine", "chunked", lambda s: 1e-6 * s * s * (8.0 if s in (2048, 8192) else 1.0))
    comparison = compare_runs(
        *_runs(tmp_path, rows, zigzag), Thresholds(max_slowdown=1e9, max_exponents={"cosine": 1.2})
    )
    (check,) = comparison.exponents
    assert check.law == "none" and check.regressed  # one line through it still climbs ~s^2
    (row,) = exponent_table(comparison.exponents).rows
    assert row[2].startswith("no power law found (one line: s^")
