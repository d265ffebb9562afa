"""``linbench ab`` stopped by its ``--max-job-s`` deadline (cli/ab_outcome.py): the complete
rounds judged and never a pass, nothing judged when none was complete, and a real A/B whose
round 1 cannot finish stopped with nothing left behind. CPU only; no test depends on a time
margin beyond the deadline it sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ab_fakes import left_behind, write_rounds
from cli_helpers import Invoke

from linbench.ab import changes
from linbench.ab.job import AbJob
from linbench.impl_code import Touched
from linbench.results.store import RunStore


@pytest.fixture(autouse=True)
def unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkout as the baseline's code (as in test_cli_ab.py): no changed impl is added."""
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: Touched({}, (), ()))


@pytest.mark.parametrize(("slowdown", "status"), [(1.0, 4), (2.0, 1)])
def test_rounds_the_deadline_stopped_are_never_a_pass(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slowdown: float, status: int
) -> None:
    """The --max-job-s deadline stopped round 6: the 5 complete rounds, which would pass, are
    judged, and the verdict is INCONCLUSIVE (exit 4), saying so with the command that would
    judge the rest; a regression they show still fails (exit 1)."""
    from linbench.ab.deadline import DeadlineError

    base = (10.0, 10.05, 9.95, 10.02, 9.98)

    def measured(*args: object) -> dict[str, list[Path]]:
        current = tuple(t * slowdown for t in base)
        done = {"baseline": write_rounds(tmp_path / "b", base), "current": write_rounds(tmp_path / "c", current)}
        raise DeadlineError("the current side's round 6", 6, done)

    monkeypatch.setattr(AbJob, "measure", measured)
    args = ("--rounds", "5", "--max-job-s", "20", "--out", tmp_path / "ab", "--device", "cpu", "--json")
    result = invoke("ab", "--baseline", "HEAD", *args)
    assert result.exit_code == status, result.output
    report = json.loads(result.stdout)
    assert report["stopped"] == {"what": "the current side's round 6", "round": 6, "rounds": 5, "max_job_s": 20.0}
    assert "deadline stopped the current side's round 6" in result.stderr
    if status == 4:
        assert report["verdict"] == "inconclusive"
        (advice,) = [line for line in report["advice"] if "deadline stopped" in line]
        assert "judged on the 5 round(s) complete before it" in advice
        assert advice.endswith("--max-job-s 40") and "--out" not in advice.split("more time: ")[1]
    recorded = RunStore(tmp_path / "ab" / "current").read_meta()["ab"]
    assert recorded["rounds"] == 5 and recorded["stopped"]["round"] == 6


def test_a_deadline_before_any_round_was_complete_judges_nothing_and_is_inconclusive(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from linbench.ab.deadline import DeadlineError

    def measured(*args: object) -> dict[str, list[Path]]:
        raise DeadlineError("the baseline side's round 1", 1, {"baseline": [], "current": []})

    monkeypatch.setattr(AbJob, "measure", measured)
    args = ("--max-job-s", "20", "--out", tmp_path / "ab", "--device", "cpu", "--format", "md")
    result = invoke("ab", "--baseline", "HEAD", *args)
    assert result.exit_code == 4, result.output
    assert "the --max-job-s 20 deadline stopped the baseline side's round 1: no round was complete" in result.stdout
    assert "--max-job-s 40" in result.stdout and "**INCONCLUSIVE: 0 points compared" in result.stdout
    assert not (tmp_path / "ab" / "current").exists()  # nothing merged
    as_json = invoke("ab", "--baseline", "HEAD", *args[:-2], "--json")
    report = json.loads(as_json.stdout)
    assert as_json.exit_code == 4 and report["verdict"] == "inconclusive" and report["exit_status"] == 4
    assert {"baseline", "unjudged", "one_sided", "mismatched", "points"} <= set(report)  # compare's keys, all there


def test_a_real_ab_whose_round_one_cannot_finish_in_time_is_stopped_and_inconclusive(
    invoke: Invoke, tmp_path: Path, ab_temp: Path
) -> None:
    """A point of 10^8 timed calls (hours) and a --max-job-s of 8: round 1 (or the baseline's
    --help before it, on a slow machine) is stopped at the deadline, the worktree is removed,
    and the verdict is INCONCLUSIVE, exit 4, never a pass."""
    sweep = ["--device", "cpu", "--variant", "softmax:sdpa", "--no-against", "--seq", "64", "--min-reps", "100000000"]
    args = ("--max-job-s", "8", "--no-widen", "--out", tmp_path / "ab", "--json")
    result = invoke("ab", "--baseline", "HEAD", *sweep, *args)
    assert result.exit_code == 4, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "inconclusive" and report["stopped"]["rounds"] == 0
    assert "the --max-job-s deadline stopped the baseline side's" in result.stderr
    assert not left_behind(ab_temp)
