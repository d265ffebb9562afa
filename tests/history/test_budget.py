"""Budgets: made from a run with a margin, a rerun within it passes, a point over its limit is
named with how far over, and a bad budget file is one line. No device: the runs are written, not measured."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_runs import write_history
from synthetic_runs import failed, series, write_run

from linbench.history.budget import Budget, BudgetError, Judgement, Unjudged, judge, read, write
from linbench.report.load import read_run

POINT = ("gated-deltanet", "chunked", "2048")


def test_a_run_is_within_a_budget_made_from_it(tmp_path: Path) -> None:
    (run,) = write_history(tmp_path / "runs", 1)
    budget_file = tmp_path / "budget.toml"
    budget_file.write_text(write(read_run(run), 0.2))
    budget = read(budget_file)
    assert len(budget.limits) == 18 and all(limit.time_ms and limit.memory_bytes for limit in budget.limits)
    assert {limit.statistic for limit in budget.limits} == {"p20"}  # what the run recorded
    assert judge(read_run(run), budget) == Judgement([], [], [], [])


def test_a_point_over_its_limit_is_named_with_how_far(tmp_path: Path) -> None:
    first, stepped = write_history(tmp_path / "runs", 2, step=1.5, step_from=2, point=POINT)
    budget_file = tmp_path / "budget.toml"
    budget_file.write_text(write(read_run(first), 0.2))
    judgement = judge(read_run(stepped), read(budget_file))
    assert judgement.unmatched == [] and judgement.failed
    assert {(o.point, o.what) for o in judgement.overruns} == {
        ("gated-deltanet:chunked fwd fp32 B1 H8 S2048 D64", "time"),
        ("gated-deltanet:chunked fwdbwd fp32 B1 H8 S2048 D64", "time"),
    }
    assert all(0.0 < o.by < 0.5 for o in judgement.overruns)  # 1.5× against 1.2×, with the copies' noise


def test_a_limit_without_shape_bounds_every_shape(tmp_path: Path) -> None:
    (run,) = write_history(tmp_path / "runs", 1)
    budget_file = tmp_path / "budget.toml"
    budget_file.write_text('budget_version = 1\n[[point]]\nvariant = "softmax"\nimpl = "sdpa"\ntime_ms = 1e-6\n'
                           '[[point]]\nvariant = "kda"\ntime_ms = 1.0\n')  # fmt: skip
    judgement = judge(read_run(run), read(budget_file))
    assert len(judgement.overruns) == 6 and judgement.unmatched == [2]


def _budget(tmp_path: Path, *limits: str) -> Budget:
    path = tmp_path / "budget.toml"
    path.write_text("budget_version = 1\n" + "".join(f"[[point]]\n{limit}\n" for limit in limits))
    return read(path)


CHUNKED = 'variant = "cosine"\nimpl = "chunked"\n'


@pytest.mark.parametrize(
    ("status", "limit", "over"),
    [
        ("timeout", "time_ms = 1000", True),  # a point too slow to finish is over any time limit
        ("oom", "memory_bytes = 1e12", True),
        ("error", "time_ms = 1000", True),
        ("mismatch", "memory_bytes = 1e12", True),
        ("oom", "time_ms = 1000", False),  # its time was never measured: not judged, not passed
        ("timeout", "memory_bytes = 1e12", False),
        ("skipped", "time_ms = 1000", False),
    ],
)
def test_a_point_that_ended_without_a_figure_is_over_or_unjudged(
    tmp_path: Path, status: str, limit: str, over: bool
) -> None:
    run = write_run(tmp_path / "run", [failed("cosine", "chunked", 2048, status)])
    judgement = judge(read_run(run), _budget(tmp_path, CHUNKED + "seq = 2048\n" + limit))
    ended = [Unjudged("cosine:chunked fwd fp32 B1 H8 S2048 D64", f"it ended {status}")]
    assert judgement.failed is over
    assert (judgement.broken, judgement.unjudged) == ((ended, []) if over else ([], ended))
    assert judgement.unmatched == ([] if over else [1])  # a limit whose only point went unjudged judged nothing


def test_a_limit_over_many_points_names_those_it_could_not_judge(tmp_path: Path) -> None:
    rows = [*series("cosine", "chunked", lambda s: 1.0, seqs=(1024,)), failed("cosine", "chunked", 2048, "skipped")]
    run = write_run(tmp_path / "run", rows)
    judgement = judge(read_run(run), _budget(tmp_path, CHUNKED + "time_ms = 1000", 'variant = "kda"\ntime_ms = 1'))
    assert not judgement.failed and judgement.overruns == []
    assert judgement.unjudged == [Unjudged("cosine:chunked fwd fp32 B1 H8 S2048 D64", "it ended skipped")]
    assert judgement.unmatched == [2]


def test_a_limit_on_a_statistic_the_run_did_not_record_is_not_judged_on_another(tmp_path: Path) -> None:
    """A limit made from CUDA-graph replays must not pass (or fail) an eager median: the point
    is named, and a limit that judged nothing makes the budget inconclusive."""
    run = write_run(tmp_path / "run", series("cosine", "chunked", lambda s: 1.0, seqs=(1024,)))
    budget = _budget(tmp_path, CHUNKED + 'time_ms = 1000\nstatistic = "graph median"')
    judgement = judge(read_run(run), budget)
    why = "its graph median time was not recorded (the limit is on it)"
    assert judgement.unjudged == [Unjudged("cosine:chunked fwd fp32 B1 H8 S1024 D64", why)]
    assert judgement.unmatched == [1] and not judgement.failed
    over = judge(read_run(run), _budget(tmp_path, CHUNKED + 'time_ms = 0.5\nstatistic = "median"'))
    assert [o.what for o in over.overruns] == ["time"]


def test_points_that_differ_only_in_a_column_past_the_shape_have_names_of_their_own(tmp_path: Path) -> None:
    """Two GQA points over a limit, one with 2 kv heads and one with 8, were one name: the
    count of points over the budget took them for one."""
    rows = [
        *series("cosine", "chunked", lambda s: 2.0, seqs=(1024,), kv_heads=2),
        *series("cosine", "chunked", lambda s: 2.0, seqs=(1024,)),
    ]
    judgement = judge(read_run(write_run(tmp_path / "run", rows)), _budget(tmp_path, CHUNKED + "time_ms = 1"))
    assert sorted(o.point for o in judgement.overruns) == [
        "cosine:chunked fwd fp32 B1 H8 S1024 D64",
        "cosine:chunked fwd fp32 B1 H8 S1024 D64 kv2",
    ]


def test_a_memory_limit_on_a_point_without_memory_is_not_judged(tmp_path: Path) -> None:
    rows = series("cosine", "chunked", lambda s: 1.0, seqs=(1024,))
    rows[0]["peak_bytes"] = None
    run = write_run(tmp_path / "run", rows)
    judgement = judge(read_run(run), _budget(tmp_path, CHUNKED + "memory_bytes = 1e12"))
    assert judgement.unjudged == [Unjudged("cosine:chunked fwd fp32 B1 H8 S1024 D64", "its memory was not recorded")]
    assert judgement.unmatched == [1] and not judgement.failed


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
        ("budget_version = 1\n[[point]]\ntime_ms = 1\nstatistic = 'mean'\n", "statistic 'mean' is not one of"),
        ("budget_version = [", "cannot be read"),
    ],
)
def test_a_bad_budget_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "budget.toml"
    path.write_text(text)
    with pytest.raises(BudgetError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        read(path)
