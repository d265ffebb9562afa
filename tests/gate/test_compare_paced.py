"""On a CPU the gate judges each one-thread process's paced CPU time where both sides paced
every process against the same reference (device: cpu; synthetic runs): a virtual core's
phases spread the CPU times between processes, the paced figures divide them out, so a point
too spread in CPU time is judged and a planted +30% caught; the times shown stay milliseconds."""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist

from synthetic_processes import write_process_run
from synthetic_runs import series

from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.render import points_table
from linbench.gate.statistic import CPU_TIME, PACED
from linbench.report.load import read_run

LINEAR = lambda s: 0.01 * s  # noqa: E731
# 20 processes' CPU times as a virtual core's phases spread them (σ̂ ≈ 15%), and their paced
# figures (σ̂ ≈ 0.2%).
PHASES = tuple(round(0.15 * NormalDist().inv_cdf((n + 0.5) / 20), 6) for n in range(20))
PACED_STEADY = tuple(round(0.002 * NormalDist().inv_cdf((n + 0.5) / 20), 6) for n in range(20))


def _rows(time_factor: float = 1.0, index: int | None = None) -> list[dict]:
    rows = series("cosine", "chunked", LINEAR, seqs=(1024, 2048, 4096), threads=1)
    rows = [row | {"cpu_ms_p20": row["time_ms"] * 0.98} for row in rows]
    if index is not None:  # a slower call is slower in every figure: its paced one follows its CPU time
        rows[index] = rows[index] | {c: rows[index][c] * time_factor for c in ("time_ms", "time_ms_p20", "cpu_ms_p20")}
    return rows


def _compare(tmp_path: Path, base: list[dict], cur: list[dict], base_paced: bool = True):
    """CPU times spread by the phases on both sides; paced figures steady where paced."""
    kwargs = {"offsets": PHASES, "cpu_offsets": PHASES}
    baseline = write_process_run(tmp_path / "base", base, **kwargs, paced_offsets=PACED_STEADY if base_paced else None)
    current = write_process_run(tmp_path / "cur", cur, **kwargs, paced_offsets=PACED_STEADY)
    return compare_runs(read_run(baseline), read_run(current), Thresholds())


def test_cpu_times_spread_by_phases_with_steady_paced_figures_are_judged_on_the_paced(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _rows())
    assert {p.statistic for p in comparison.points} == {PACED}
    assert {p.time_verdict for p in comparison.points} == {"same"}
    assert comparison.verdict == "pass"
    # The times shown are the CPU times (milliseconds), not the figure in reference calls.
    first = comparison.points[0]
    assert first.base_ms is not None and abs(first.base_ms - 0.98 * LINEAR(1024)) < 0.01 * LINEAR(1024)
    assert "a time marked paced cpu time" in points_table(comparison).title


def test_a_planted_30_percent_is_caught_on_the_paced_figures(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, _rows(), _rows(1.3, index=1))
    assert [p.time_verdict for p in comparison.points] == ["same", "regression", "same"]
    assert comparison.failed


def test_a_baseline_without_paced_figures_is_judged_on_both_sides_cpu_times(tmp_path: Path) -> None:
    # A baseline measured before the pace: both sides' CPU times, never paced against CPU time;
    # spread by the phases, they cannot resolve the change the gate must catch.
    comparison = _compare(tmp_path, _rows(), _rows(), base_paced=False)
    assert {p.statistic for p in comparison.points} == {CPU_TIME}
    assert comparison.verdict == "inconclusive"
