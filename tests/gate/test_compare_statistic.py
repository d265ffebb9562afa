"""compare on the time that preemption cannot move (CPU, synthetic CSVs, no timing): a CPU
point is judged on its processes' p20s, whose medians may land far apart on a busy machine; a
run without p20s is judged on its medians and the output says so; a GPU's eager time keeps
its median; a CPU series' exponent is fitted on its p20s."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import series, write_run

from linbench.gate.compare import Thresholds, compare_runs
from linbench.gate.render import advice_lines, exponent_table, points_table
from linbench.gate.statistic import MEDIAN, P20
from linbench.report.load import read_run
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore

# A busy CPU: each process's median lands on the fast mode or on a preempted one (1.85 to 81
# ms), while the fastest fifth of its repetitions stays put (p20s within 0.4%).
MEDIANS = (1.85, 81.0, 2.1, 40.0, 1.9, 65.0, 2.4)
P20S = (1.800, 1.803, 1.797, 1.801, 1.799, 1.802, 1.798)


def _write(folder: Path, p20s: tuple[float, ...] | None, device: str = "cpu", medians=MEDIANS) -> Path:
    """A run of one cosine:chunked point at 1k whose processes have ``medians`` and ``p20s``
    (None: processes.csv without p20 or p80, as a run made before them)."""
    (row,) = series("cosine", "chunked", lambda s: 10.0, seqs=(1024,), device=device)
    row |= {"time_ms": sorted(medians)[len(medians) // 2], "time_ms_p20": None, "time_ms_p80": None}
    if p20s is not None:
        row["time_ms_p20"] = sorted(p20s)[len(p20s) // 2]
    store = RunStore(write_run(folder, [row]))
    for n, median in enumerate(medians):
        process = {c: row.get(c) for c in KEY_COLUMNS} | {"process": n, "pid": 1000 + n, "status": "ok"}
        process |= {"time_ms": median, "peak_bytes": row["peak_bytes"]}
        if p20s is not None:
            process |= {"time_ms_p20": p20s[n], "time_ms_p80": median * 1.1}
        store.append_process(process)
    return store.path


def _compare(tmp_path: Path, base_p20s, cur_p20s, device: str = "cpu", cur_medians=MEDIANS):
    base = read_run(_write(tmp_path / "base", base_p20s, device))
    cur = read_run(_write(tmp_path / "cur", cur_p20s, device, cur_medians))
    return compare_runs(base, cur, Thresholds())


def test_process_medians_far_apart_with_p20s_together_are_judged(tmp_path: Path) -> None:
    shuffled = MEDIANS[3:] + MEDIANS[:3]  # each process on another mode than its baseline twin
    comparison = _compare(tmp_path, P20S, P20S, cur_medians=shuffled)
    (point,) = comparison.points
    assert point.statistic == P20 and point.time_verdict == "same" and point.settled
    assert point.base_ms == pytest.approx(1.8, rel=1e-3) and not point.fell_back
    assert comparison.verdict == "pass"
    assert "(p20)" in points_table(comparison).rows[0][1] and "not a median" in points_table(comparison).title


def test_a_30_percent_shift_in_the_p20s_is_caught(tmp_path: Path) -> None:
    comparison = compare_runs(
        read_run(_write(tmp_path / "base", P20S)),
        read_run(_write(tmp_path / "cur", tuple(p * 1.3 for p in P20S))),
        Thresholds(),
    )
    (point,) = comparison.points
    assert point.time_verdict == "regression" and point.ratio == pytest.approx(1.3, rel=1e-3)
    assert comparison.verdict == "regression"


def test_without_p20_the_medians_are_judged_and_the_output_says_so(tmp_path: Path) -> None:
    for name, base_p20s in (("neither", None), ("one side", P20S)):
        comparison = _compare(tmp_path / name, base_p20s, None)
        (point,) = comparison.points
        assert point.statistic == MEDIAN and point.fell_back and point.time_verdict == "noisy"
        (line,) = [line for line in advice_lines(comparison, 0.05) if "not p20s" in line]
        assert line.startswith("1 CPU point(s) judged on process medians, not p20s") and "cosine:chunked" in line
        assert "(median)" in points_table(comparison).rows[0][1]


def test_a_gpu_eager_time_keeps_its_median_and_is_no_fallback(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, P20S, P20S, device="cuda:0")
    (point,) = comparison.points
    assert point.statistic == MEDIAN and not point.fell_back and point.time_verdict == "noisy"
    assert not [line for line in advice_lines(comparison, 0.05) if "not p20s" in line]


def test_a_cpu_series_exponent_is_fitted_on_its_p20s(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", lambda s: 0.01 * s)
    # Medians pushed up at the long lengths by preemption (a quadratic look); p20s linear.
    busy = [row | {"time_ms": row["time_ms"] * (1 + row["seq"] / 1024)} for row in rows]
    cur = read_run(write_run(tmp_path / "cur", busy))
    comparison = compare_runs(
        read_run(write_run(tmp_path / "base", rows)), cur, Thresholds(max_exponents={"cosine": 1.2})
    )
    (check,) = comparison.exponents
    assert check.statistic == P20 and check.exponent == pytest.approx(1.0, abs=0.01) and not check.regressed
    assert exponent_table(comparison.exponents).rows[0][1].endswith(", p20s")
