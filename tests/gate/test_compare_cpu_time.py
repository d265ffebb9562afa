"""On a CPU the gate judges each one-thread process's CPU time where both sides recorded it
(device: cpu; synthetic runs): preemption spreads the wall clock between processes, not the
work a call did, so a point too noisy on the wall clock is judged, and a planted +30% caught."""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist

from synthetic_processes import NOISY, planted, write_process_run
from synthetic_runs import series

from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.render import points_table
from linbench.gate.statistic import CPU_TIME, P20
from linbench.report.load import read_run

LINEAR = lambda s: 0.01 * s  # noqa: E731
# The CPU times of 20 processes: within 0.5% of each other (σ̂ ≈ 0.2%).
STEADY = tuple(round(0.002 * NormalDist().inv_cdf((n + 0.5) / 20), 6) for n in range(20))


def _rows(threads: int = 1, cpu: bool = True) -> list[dict]:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024, 2048, 4096), threads=threads)
    return [row | {"cpu_ms_p20": row["time_ms"] * 0.98} if cpu else row for row in rows]


def _compare(tmp_path: Path, base: list[dict], cur: list[dict]):
    """Each side's wall times spread as a busy machine spreads them (σ̂ ≈ 22%), its CPU times
    steady."""
    baseline = write_process_run(tmp_path / "base", base, offsets=NOISY, cpu_offsets=STEADY)
    current = write_process_run(tmp_path / "cur", cur, offsets=NOISY, cpu_offsets=STEADY)
    return compare_runs(read_run(baseline), read_run(current), Thresholds())


def test_noisy_wall_times_with_steady_cpu_times_are_judged_on_the_cpu_times(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _rows())
    assert {p.statistic for p in comparison.points} == {CPU_TIME}
    assert {p.time_verdict for p in comparison.points} == {"same"}
    assert comparison.verdict == "pass" and not comparison.failed
    assert "a time marked cpu time" in points_table(comparison).title


def test_a_planted_30_percent_on_one_point_is_caught_on_the_cpu_times(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), planted(_rows(), 1, time_ms=1.3))
    assert [p.time_verdict for p in comparison.points] == ["same", "regression", "same"]
    assert comparison.failed


def test_the_same_noise_without_cpu_times_is_not_judged(tmp_path: Path) -> None:
    # What the CPU time buys: the wall clock's p20s of these processes leave every point noisy.
    comparison = _compare(tmp_path, _rows(cpu=False), planted(_rows(cpu=False), 1, time_ms=1.3))
    assert {p.statistic for p in comparison.points} == {P20}
    assert not comparison.failed and comparison.verdict == "inconclusive"


def test_several_threads_are_judged_on_the_wall_clock(tmp_path: Path) -> None:
    # A pool's threads spin while they wait for a preempted sibling: CPU time, not work.
    comparison = _compare(tmp_path, _rows(threads=2), _rows(threads=2))
    assert {p.statistic for p in comparison.points} == {P20}


def test_one_side_without_cpu_times_is_judged_on_the_wall_clock_of_both(tmp_path: Path) -> None:
    # A baseline recorded before the column: both sides' p20s, never CPU time against wall time.
    comparison = _compare(tmp_path, _rows(cpu=False), _rows())
    assert {p.statistic for p in comparison.points} == {P20}


def test_an_oversubscribed_point_judged_on_cpu_time_is_judged(tmp_path: Path) -> None:
    # Preemption adds no CPU time: a point whose cores other processes took is still judged.
    marked = [row | {"oversubscribed": True, "neighbour_cpu": 1.9} for row in _rows()]
    comparison = _compare(tmp_path, marked, planted(marked, 0, time_ms=1.3))
    assert [p.time_verdict for p in comparison.points] == ["regression", "same", "same"]
