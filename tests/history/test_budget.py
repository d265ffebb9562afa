"""Budgets: made from a run with a margin, a rerun within it passes, a point over its limit is
named with how far over, and a bad budget file is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_runs import write_history

from linbench.history.budget import BudgetError, judge, read, write
from linbench.report.load import read_run

POINT = ("gated-deltanet", "chunked", "2048")


def test_a_run_is_within_a_budget_made_from_it(tmp_path: Path) -> None:
    (run,) = write_history(tmp_path / "runs", 1)
    budget_file = tmp_path / "budget.toml"
    budget_file.write_text(write(read_run(run), 0.2))
    budget = read(budget_file)
    assert len(budget.limits) == 18 and all(limit.time_ms and limit.memory_bytes for limit in budget.limits)
    assert judge(read_run(run), budget) == ([], [])


def test_a_point_over_its_limit_is_named_with_how_far(tmp_path: Path) -> None:
    first, stepped = write_history(tmp_path / "runs", 2, step=1.5, step_from=2, point=POINT)
    budget_file = tmp_path / "budget.toml"
    budget_file.write_text(write(read_run(first), 0.2))
    overruns, unmatched = judge(read_run(stepped), read(budget_file))
    assert unmatched == []
    assert {(o.point, o.what) for o in overruns} == {
        ("gated-deltanet:chunked fwd fp32 B1 H8 S2048 D64", "time"),
        ("gated-deltanet:chunked fwdbwd fp32 B1 H8 S2048 D64", "time"),
    }
    assert all(0.0 < o.by < 0.5 for o in overruns)  # 1.5× against 1.2×, with the copies' noise


def test_a_limit_without_shape_bounds_every_shape(tmp_path: Path) -> None:
    (run,) = write_history(tmp_path / "runs", 1)
    budget_file = tmp_path / "budget.toml"
    budget_file.write_text('budget_version = 1\n[[point]]\nvariant = "softmax"\nimpl = "sdpa"\ntime_ms = 1e-6\n'
                           '[[point]]\nvariant = "kda"\ntime_ms = 1.0\n')  # fmt: skip
    overruns, unmatched = judge(read_run(run), read(budget_file))
    assert len(overruns) == 6 and unmatched == [2]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("budget_version = 2\n[[point]]\ntime_ms = 1\n", "budget_version 2; this linbench reads up to 1"),
        ("budget_version = 1\n", "no [[point]] limit"),
        ("budget_version = 1\n[[point]]\nvariant = 'x'\n", "sets neither time_ms nor memory_bytes"),
        ("budget_version = 1\n[[point]]\nspeed = 3\ntime_ms = 1\n", "unknown key(s) speed"),
        ("budget_version = 1\n[[point]]\ntime_ms = -1\n", "time_ms -1 is not a finite number above 0"),
        # nan compares false with every limit: a failing gate would have passed
        ("budget_version = 1\n[[point]]\ntime_ms = nan\n", "time_ms nan is not a finite number above 0"),
        ("budget_version = 1\n[[point]]\nmemory_bytes = inf\n", "memory_bytes inf is not a finite number above 0"),
        ("budget_version = 1\ntolerance = nan\n[[point]]\ntime_ms = 1\n", "tolerance nan is not a finite number ≥ 0"),
        ("budget_version = [", "cannot be read"),
    ],
)
def test_a_bad_budget_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "budget.toml"
    path.write_text(text)
    with pytest.raises(BudgetError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        read(path)
