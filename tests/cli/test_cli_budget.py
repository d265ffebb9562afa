"""``linbench budget`` and ``run --budget`` end to end on CPU: a budget made from a run holds for
that run, a limit below a point's time exits 1 naming the point, a limit that judged no point
exits 4, a bad budget file exits 2 before anything is measured. (A rerun's times are never
compared with a margin here: that would depend on the machine's load.)"""

from __future__ import annotations

from pathlib import Path

from cli_helpers import Invoke, assert_usage_error
from synthetic_processes import write_process_run
from synthetic_runs import failed, series, write_run
from torn_rows import tear_last_row

CPU = ("--device", "cpu")
TINY = ("--seq", "64", "--heads", "2", "--dim", "16", "--budget-s", "0.05", "--warmup-s", "0", *CPU)


def _run(invoke: Invoke, out: Path, *more: object):  # type: ignore[no-untyped-def]
    return invoke("run", "--variant", "cosine:chunked", "--no-against", *TINY, "--out", out, "--quiet", *more)


def test_run_against_budgets_from_the_budget_command(invoke: Invoke, tmp_path: Path) -> None:
    assert _run(invoke, tmp_path / "first").exit_code == 0
    (run,) = (tmp_path / "first").iterdir()
    budget = tmp_path / "budget.toml"
    made = invoke("budget", run, "--margin", "20%", "--out", budget)
    assert made.exit_code == 0 and "(1 points)" in made.output
    tight = budget.read_text().replace("time_ms = ", "time_ms = 0.000001 #")
    (tmp_path / "tight.toml").write_text(tight)
    loose = (
        budget.read_text()
        .replace("time_ms = ", "time_ms = 1000000 #")
        .replace("memory_bytes = ", "memory_bytes = 1e15 #")
    )
    (tmp_path / "loose.toml").write_text(loose)
    passed = _run(invoke, tmp_path / "loose", "--budget", tmp_path / "loose.toml")
    assert passed.exit_code == 0 and "every point judged is within its limits" in passed.output
    failed = _run(invoke, tmp_path / "tight", "--budget", tmp_path / "tight.toml")
    assert failed.exit_code == 1
    assert "budget: cosine:chunked fwd fp32 B1 H2 S64 D16: time" in failed.output and "over its limit" in failed.output


def test_a_budget_that_judged_nothing_does_not_pass(invoke: Invoke, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.toml"  # a limit for a length this run did not measure
    elsewhere.write_text('budget_version = 1\n[[point]]\nvariant = "cosine"\nseq = 128\ntime_ms = 1000000\n')
    result = _run(invoke, tmp_path / "out", "--budget", elsewhere)
    assert result.exit_code == 4
    assert "budget: 1 limit(s) judged no point of this run: 1" in result.output
    assert "INCONCLUSIVE" in result.output


def test_a_bad_budget_is_refused_before_measuring(invoke: Invoke, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("budget_version = 1\n")
    assert_usage_error(_run(invoke, tmp_path / "out", "--budget", bad), "no [[point]] limit")
    assert not (tmp_path / "out").exists()


def test_a_budget_is_not_made_from_a_run_with_a_torn_row(invoke: Invoke, tmp_path: Path) -> None:
    run = write_process_run(tmp_path / "run", series("cosine", "chunked", lambda s: s / 1000, seqs=(1024, 2048)))
    tear_last_row(run / "results.csv")  # 2048's row: its limit would be left out without a word
    out = tmp_path / "budget.toml"
    result = invoke("budget", run, "--out", out)
    assert_usage_error(result, "line 3 is torn")
    assert "budget takes only whole runs" in result.stderr and not out.exists()


def test_a_budget_of_a_run_without_an_ok_point_is_refused(invoke: Invoke, tmp_path: Path) -> None:
    """Defect: it wrote a budget with no limit, exit 0; run --budget refused it only later."""
    run = write_run(tmp_path / "run", [failed("cosine", "chunked", 1024, "oom")])
    out = tmp_path / "budget.toml"
    assert_usage_error(invoke("budget", run, "--out", out), "has no ok point with a time")
    assert not out.exists()
