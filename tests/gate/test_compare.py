"""The regression gate: planted slowdowns, memory growth, an extra kernel launch and a
quadratic turn are caught; noise, noisy points and unchanged runs are not called regressions.
No device: the runs are written, not measured."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_processes import MODERATE, NOISY, QUIET, planted, write_process_run
from synthetic_runs import decode_series, failed, scaled, series, write_run

from linbench.gate.compare import CompareError, Thresholds, check_same_device, compare_runs, environment_lines
from linbench.gate.render import _launch_cell, verdict_line
from linbench.report.load import read_run

LINEAR = lambda s: 0.01 * s  # noqa: E731
GPU = {"device": "cuda:0", "device_name": "Test GPU"}


def _runs(tmp_path: Path, base_rows: list[dict], cur_rows: list[dict]):
    base = read_run(write_run(tmp_path / "base", base_rows))
    cur = read_run(write_run(tmp_path / "cur", cur_rows))
    return base, cur


def _verdicts(comparison) -> set[str]:
    return {p.time_verdict for p in comparison.points}


def _suite() -> list[dict]:
    """A small GPU suite: quiet fused kernels, graph-timed chunked points whose eager time is
    noisy, and a softmax baseline; every point counts its kernel launches."""
    kernel = series("cosine", "kernel", LINEAR, peak_bytes=lambda s: 32768.0 * s, seqs=(1024, 4096), **GPU)
    chunked = series(
        "cosine", "chunked", lambda s: 0.05 * s, peak_bytes=lambda s: 65536.0 * s, seqs=(1024, 4096), **GPU
    )
    sdpa = series("softmax", "sdpa", lambda s: 1e-5 * s * s, seqs=(1024, 4096), **GPU)
    for row in chunked:
        row["device_ms"] = row["time_ms"] / 3  # graph replays: without the host's launches
    for row in kernel + chunked + sdpa:
        row["kernels_per_call"] = 12
    return kernel + chunked + sdpa


def _eager_offsets(row: dict) -> tuple[float, ...]:
    return MODERATE if row["impl"] == "chunked" else QUIET


def _compare_suite(tmp_path: Path, base: list[dict], cur: list[dict], thresholds: Thresholds | None = None):
    baseline = write_process_run(tmp_path / "base", base, _eager_offsets, graph_offsets=QUIET)
    current = write_process_run(tmp_path / "cur", cur, _eager_offsets, graph_offsets=QUIET)
    return compare_runs(read_run(baseline), read_run(current), thresholds or Thresholds())


def test_an_unchanged_suite_passes_with_every_point_judged(tmp_path: Path) -> None:
    comparison = _compare_suite(tmp_path, _suite(), _suite())
    assert not comparison.failed and comparison.verdict == "pass"
    assert _verdicts(comparison) == {"same"}
    # The chunked points' eager times disagree: the runner measured them in 20 processes.
    assert [p.processes for p in comparison.points] == [5, 5, 20, 20, 5, 5]
    assert [p.base_processes for p in comparison.points] == [5, 5, 20, 20, 5, 5]
    assert [p.timing for p in comparison.points].count("graph") == 2
    assert {p.launch_verdict for p in comparison.points} == {"same"}


@pytest.mark.parametrize("index", range(6))
def test_a_planted_30_percent_slowdown_on_any_single_point_is_caught(tmp_path: Path, index: int) -> None:
    rows = _suite()
    column = "device_ms" if rows[index].get("device_ms") else "time_ms"  # the judged time
    comparison = _compare_suite(tmp_path, rows, planted(rows, index, **{column: 1.3}))
    assert comparison.failed and [p.key["seq"] for p in comparison.regressions] == [rows[index]["seq"]]
    (caught,) = comparison.regressions
    assert caught.key["impl"] == rows[index]["impl"] and caught.time_verdict == "regression"
    assert caught.ratio == pytest.approx(1.3, rel=1e-4)  # CSV keeps 6 digits


@pytest.mark.parametrize("index", [0, 1, 4, 5])  # the quiet kernel and sdpa points
def test_a_planted_10_percent_slowdown_on_a_quiet_point_is_caught(tmp_path: Path, index: int) -> None:
    rows = _suite()
    comparison = _compare_suite(tmp_path, rows, planted(rows, index, time_ms=1.1))
    (caught,) = comparison.regressions
    assert caught.time_verdict == "regression" and caught.threshold == pytest.approx(0.05)


def test_a_planted_10_percent_memory_growth_is_caught(tmp_path: Path) -> None:
    rows = _suite()
    comparison = _compare_suite(tmp_path, rows, planted(rows, 2, peak_bytes=1.1))
    (caught,) = comparison.regressions
    assert caught.memory_verdict == "regression" and caught.time_verdict == "same"
    assert caught.memory_growth == pytest.approx(0.1, rel=1e-4)  # 6 digits in CSV


def test_one_extra_kernel_launch_per_call_is_caught(tmp_path: Path) -> None:
    rows = _suite()
    more = planted(rows, 3, kernels_per_call=13 / 12)
    comparison = _compare_suite(tmp_path, rows, more)
    (caught,) = comparison.regressions
    assert caught.launch_verdict == "regression" and (caught.base_kernels, caught.kernels) == (12, 13)
    fewer = _compare_suite(tmp_path / "fewer", rows, planted(rows, 3, kernels_per_call=11 / 12))
    assert not fewer.failed and fewer.points[3].launch_verdict == "fewer"
    tolerated = _compare_suite(tmp_path / "tolerated", rows, more, Thresholds(max_launch_growth=0.10))
    assert not tolerated.failed and tolerated.points[3].launch_verdict == "more"


def test_a_noisy_point_is_noisy_not_a_regression(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024, 2048), **GPU)
    base = write_process_run(tmp_path / "base", rows, NOISY)
    cur = write_process_run(tmp_path / "cur", scaled(rows, time=1.5), NOISY)
    comparison = compare_runs(read_run(base), read_run(cur), Thresholds())
    assert not comparison.failed and _verdicts(comparison) == {"noisy"}
    assert comparison.count("noisy") == 2 and all(p.noise > 0.30 for p in comparison.points)


def test_the_eager_time_of_a_graph_timed_point_is_reported_beside_it_not_gated(tmp_path: Path) -> None:
    rows = _suite()
    # The host-side time doubles, the graph replays do not: the eager column says so, and the
    # gate judges the replays (a change that adds launches fails on kernels_per_call instead).
    comparison = _compare_suite(tmp_path, rows, planted(rows, 2, time_ms=2.0))
    assert not comparison.failed and comparison.regressions == []
    shown = comparison.points[2]
    assert shown.timing == "graph" and shown.time_verdict == "same"
    assert shown.eager_verdict == "regression" and shown.eager_ratio == pytest.approx(2.0, rel=1e-4)
    # Eager time too noisy to judge: reported, not gated.
    noisy = write_process_run(tmp_path / "nb", rows, NOISY, graph_offsets=QUIET)
    noisier = write_process_run(tmp_path / "nc", planted(rows, 2, time_ms=2.0), NOISY, graph_offsets=QUIET)
    comparison = compare_runs(read_run(noisy), read_run(noisier), Thresholds())
    assert not comparison.failed and comparison.points[2].eager_verdict == "noisy"


def test_a_point_not_graph_timed_on_both_sides_is_judged_on_its_eager_time(tmp_path: Path) -> None:
    rows = _suite()
    eager_only = [{k: v for k, v in row.items() if k != "device_ms"} for row in rows]
    comparison = _compare_suite(tmp_path, rows, eager_only)
    assert {p.timing for p in comparison.points} == {"eager"} and not comparison.failed
    assert {p.eager_verdict for p in comparison.points} == {"-"}


def test_runs_without_process_data_are_unverified_but_memory_still_gates(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR, peak_bytes=lambda s: 32768.0 * s)  # 32 MiB at 1k
    comparison = compare_runs(*_runs(tmp_path, rows, scaled(rows, time=1.5)), Thresholds())
    assert not comparison.failed and _verdicts(comparison) == {"unverified"}
    assert all(p.ratio == pytest.approx(1.5, rel=1e-4) and p.threshold is None for p in comparison.points)
    grown = compare_runs(*_runs(tmp_path / "grown", rows, scaled(rows, time=1.5, memory=1.1)), Thresholds())
    assert grown.failed and {p.memory_verdict for p in grown.points} == {"regression"}


def test_a_legacy_baseline_against_a_run_with_processes_is_unverified(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    base = read_run(write_run(tmp_path / "base", rows))
    cur = read_run(write_process_run(tmp_path / "cur", scaled(rows, time=2.0)))
    comparison = compare_runs(base, cur, Thresholds())
    assert not comparison.failed and _verdicts(comparison) == {"unverified"}
    assert {(p.base_processes, p.processes) for p in comparison.points} == {(0, 5)}


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
    assert comparison.failed and [p.time_verdict for p in comparison.points] == ["unverified", "broken"]
    fixed = compare_runs(*_runs(tmp_path / "fixed", broken, rows), Thresholds())
    assert not fixed.failed and [p.time_verdict for p in fixed.points] == ["unverified", "fixed"]


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
    with pytest.raises(CompareError, match=r"no point in common \(same variant, impl, shape...\)$"):
        compare_runs(*_runs(tmp_path, base, cur), Thresholds())
    decode = decode_series("cosine", "recurrent", LINEAR, lambda s: 4 * s, contexts=(1024,))
    with pytest.raises(CompareError, match=r"no point in common .*: the baseline is a run run, current a decode run"):
        compare_runs(*_runs(tmp_path / "decode", base, decode), Thresholds())


def test_runs_from_different_devices_are_refused(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    other = [{**row, "device_name": "Other CPU"} for row in rows]
    with pytest.raises(CompareError, match="different devices"):
        check_same_device(*_runs(tmp_path, rows, other))


def _with_meta(run, **meta):  # type: ignore[no-untyped-def]
    run.meta.update(meta)
    return run


def test_runs_measured_with_other_software_are_refused_and_other_machines_named(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", LINEAR)
    base, cur = _runs(tmp_path, rows, rows)
    _with_meta(base, torch="2.11.0", fla_core="0.5.0", driver_version="580.1", cpu_count=16)
    _with_meta(cur, torch="2.11.0", fla_core="0.6.0", driver_version="580.2", cpu_count=16)
    with pytest.raises(CompareError, match=r"other software \(fla_core '0.5.0' in the baseline, '0.6.0' in current\)"):
        check_same_device(base, cur)
    (line,) = environment_lines(base, cur)  # said beside the verdict when forced
    assert line.endswith(
        "fla_core '0.5.0' in the baseline, '0.6.0' in current; driver '580.1' in the baseline, '580.2' in current"
    )
    _with_meta(cur, fla_core="0.5.0", torch=None)  # a key one run lacks is not compared
    check_same_device(base, cur)
    assert environment_lines(base, cur) == [
        "the runs were measured on other machines or software: driver '580.1' in the baseline, '580.2' in current"
    ]


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
    from linbench.gate.render import exponent_table

    rows = series("cosine", "chunked", LINEAR)
    zigzag = series("cosine", "chunked", lambda s: 1e-6 * s * s * (8.0 if s in (2048, 8192) else 1.0))
    comparison = compare_runs(
        *_runs(tmp_path, rows, zigzag), Thresholds(max_slowdown=1e9, max_exponents={"cosine": 1.2})
    )
    (check,) = comparison.exponents
    assert check.law == "none" and check.regressed  # one line through it still climbs ~s^2
    (row,) = exponent_table(comparison.exponents).rows
    assert row[2].startswith("no power law found (one line: s^")


def test_a_call_that_makes_the_host_wait_once_more_is_caught(tmp_path: Path) -> None:
    """host_syncs are counted, not sampled: one more wait a call fails at any time verdict
    (graph timing could not show it: such a call cannot be captured), one fewer passes."""
    rows = _suite()
    for row in rows:
        row["host_syncs"] = 1 if row["impl"] == "kernel" else 0
    more = planted(rows, 0, host_syncs=2)
    comparison = _compare_suite(tmp_path, rows, more)
    (caught,) = comparison.regressions
    assert caught.sync_verdict == "regression" and (caught.base_syncs, caught.syncs) == (1, 2)
    assert caught.time_verdict == "same" and caught.launch_verdict == "same"
    assert "1 host-sync regression(s)" in verdict_line(comparison)
    assert _launch_cell(caught) == "12 same; host syncs 1 → 2 regression"
    first = [dict(row) for row in rows]
    first[2]["host_syncs"] = 1  # a chunked point that never waited now waits once
    (new,) = _compare_suite(tmp_path / "new", rows, first).regressions
    assert new.sync_verdict == "regression" and (new.base_syncs, new.syncs) == (0, 1)
    fewer = _compare_suite(tmp_path / "fewer", rows, planted(rows, 0, host_syncs=0.0))
    assert not fewer.failed and fewer.points[0].sync_verdict == "fewer"


def test_a_launch_growth_allowance_does_not_excuse_a_host_wait(tmp_path: Path) -> None:
    rows = _suite()
    for row in rows:
        row["host_syncs"] = 10
    more = planted(rows, 0, host_syncs=1.1)
    comparison = _compare_suite(tmp_path, rows, more, Thresholds(max_launch_growth=0.20))
    (caught,) = comparison.regressions
    assert caught.sync_verdict == "regression" and (caught.base_syncs, caught.syncs) == (10, 11)
