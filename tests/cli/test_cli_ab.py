"""``linbench ab``: refusals that leave nothing behind, and one real A/B of a small CPU sweep.

The real A/B times the same code on both sides of a shared machine, whose noise can move a
point by tens of percent (see tests/cli/test_cli_compare_real.py), so it asserts only what
noise cannot produce: the A/B runs to a verdict (exit 0, 1 or 4, never 2 or a crash), every
point is measured once per round on both sides and is ok there, no point is `broken`, and
the baseline's worktree is gone afterwards.
"""

from __future__ import annotations

import csv
import json
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ab_fakes import left_behind, write_rounds
from cli_helpers import Invoke, assert_usage_error, linbench_argv
from result_rows import result_row

import linbench
from linbench.ab import changes
from linbench.ab.code_diff import WHOLE, CodeChange
from linbench.ab.job import AbJob
from linbench.cli import ab_cmd
from linbench.impl_code import Touched
from linbench.results.store import RunStore

ROUNDS = 3
SWEEP = [
    "--device",
    "cpu",
    "--variant",
    "softmax:sdpa",
    "--no-against",
    "--seq",
    "256,512",
    "--budget-s",
    "0.1",
    "--warmup-s",
    "0",
]


@pytest.fixture(autouse=True)
def unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkout as the baseline's code: what ab does about changed code is tested below
    with changes the test plants, never with whatever this checkout holds uncommitted."""
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: Touched({}, (), ()))


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_an_unknown_revision_is_one_line_and_leaves_nothing(invoke: Invoke, tmp_path: Path, ab_temp: Path) -> None:
    result = invoke("ab", "--baseline", "no-such-revision", "--out", tmp_path / "ab", *SWEEP)
    assert_usage_error(result, "--baseline 'no-such-revision' is not a commit")
    assert not left_behind(ab_temp) and not (tmp_path / "ab").exists()


def test_outside_a_checkout_ab_is_one_line_and_leaves_nothing(
    invoke: Invoke, tmp_path: Path, ab_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "installed" / "linbench"
    copy.mkdir(parents=True)
    with monkeypatch.context() as patch:
        patch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
        patch.setattr(linbench, "__file__", str(copy / "__init__.py"))
        result = invoke("ab", "--baseline", "HEAD", "--out", tmp_path / "ab", *SWEEP)
    assert_usage_error(result, "which is not a git checkout")
    assert not left_behind(ab_temp) and not (tmp_path / "ab").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--rounds", "0"], "--rounds 0: give at least 1"),
        (["--rounds", "5", "--max-rounds", "4"], "--max-rounds 4 is fewer than --rounds 5"),
        (["--max-slowdown", "fast"], "--max-slowdown 'fast' is not a percentage"),
        (["--format", "pdf"], "unknown --format 'pdf'"),
        (["--suite", "no-such-suite"], "'no-such-suite' does not exist"),
        (["--max-widen-s", "-1"], "--max-widen-s must be a finite number, 0 or more, not -1"),
        (["--max-job-s", "0"], "--max-job-s must be a finite number above 0, not 0"),
        (["--max-job-s", "nan"], "--max-job-s must be a finite number above 0, not nan"),  # it stopped after a round
        # these three were found bad only after every round had run
        (["--noise-z", "nan"], "--noise-z 'nan' must be a number above 0"),
        (["--max-launch-growth", "nan"], "--max-launch-growth 'nan' is not a percentage"),
        (["--control", "nosuch"], "control 'nosuch' must be VARIANT:IMPL"),
        (["--max-exponent", "cosine=nan"], "with X a finite number > 0"),
    ],
)
def test_bad_ab_flags_are_refused_before_any_round(
    invoke: Invoke, tmp_path: Path, args: list[str], fragment: str
) -> None:
    result = invoke("ab", "--baseline", "HEAD", "--out", tmp_path / "ab", *args, *SWEEP)
    assert_usage_error(result, fragment)
    assert not (tmp_path / "ab").exists()


def test_an_out_folder_that_holds_an_ab_is_refused(invoke: Invoke, tmp_path: Path) -> None:
    (tmp_path / "ab" / "current").mkdir(parents=True)
    result = invoke("ab", "--baseline", "HEAD", "--out", tmp_path / "ab", *SWEEP)
    assert_usage_error(result, "already holds current/")


@pytest.mark.parametrize(("slowdown", "status"), [(1.0, 0), (2.0, 1)])
def test_ab_exits_as_compare_does_on_the_merged_rounds(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slowdown: float, status: int
) -> None:
    """The rounds stand in for measured ones (deterministic): the same code passes, the code
    twice as slow in every round fails, and stdout is compare's own output."""
    base = (10.0, 10.05, 9.95, 10.02, 9.98)  # within 1%: 5 rounds decide either way

    def measured(*args: object) -> dict[str, list[Path]]:
        current = tuple(t * slowdown for t in base)
        return {"baseline": write_rounds(tmp_path / "b", base), "current": write_rounds(tmp_path / "c", current)}

    monkeypatch.setattr(AbJob, "measure", measured)
    result = invoke("ab", "--baseline", "HEAD", "--rounds", "5", "--out", tmp_path / "ab", "--device", "cpu", "--json")
    assert result.exit_code == status, result.output
    assert json.loads(result.stdout)["points"]  # stdout is compare's JSON, nothing else
    assert f"current -> {tmp_path / 'ab' / 'current'}" in result.stderr
    protocol = RunStore(tmp_path / "ab" / "current").read_meta()["timing_protocol"]
    # 5 rounds asked for; more, up to 100, would have followed for a point not yet decided.
    assert (protocol["name"], protocol["processes"], protocol["max_processes"]) == ("processes-v1", 5, 100)
    assert protocol["stop"] == "decided"


GATED_CHANGE = Touched({"gated-deltanet:chunked": ("linbench/variants/gated/triangular.py",)}, (), ())


@pytest.mark.parametrize(
    ("flags", "status"),
    [((), 0), (("--no-widen",), 4), (("--max-widen-s", "0.5"), 4), (("--max-widen-s", "86400"), 0)],
)
def test_a_changed_impl_the_suite_does_not_measure_is_added_or_stops_a_pass(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...], status: int
) -> None:
    """gated-deltanet:chunked's code changed (planted) and the sweep measures softmax:sdpa
    only: ab adds it to every round's --variant, saying how long it will take, or, with
    --no-widen or a --max-widen-s its predicted time passes, says it was not measured and
    exits 4, not 0."""
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: GATED_CHANGE)
    monkeypatch.setattr(changes, "code_changes", _import_time_changed)
    given: list[list[str]] = []
    base = (10.0, 10.05, 9.95, 10.02)  # 4 rounds within 1%: cleared

    def measured(job: AbJob, run_args: list[str], *more: object) -> dict[str, list[Path]]:
        given.append(run_args)
        if "gated-deltanet:chunked" in run_args:
            return _gatedwrite_rounds(tmp_path, base)
        return {"baseline": write_rounds(tmp_path / "b", base), "current": write_rounds(tmp_path / "c", base)}

    monkeypatch.setattr(AbJob, "measure", measured)
    args = ("--variant", "softmax:sdpa", "--rounds", "3", "--out", tmp_path / "ab", "--device", "cpu", "--json")
    result = invoke("ab", "--baseline", "HEAD", *args, *flags)
    assert result.exit_code == status, result.output
    report = json.loads(result.stdout)
    widened = "gated-deltanet:chunked" in given[0]
    assert widened == (status == 0)
    assert report["changed_code"]["impls"] == ["gated-deltanet:chunked"]
    assert report["changed_code"]["unmeasured"] == ([] if widened else ["gated-deltanet:chunked"])
    if widened:
        said = "added 1 impl(s) to the points: gated-deltanet:chunked (about "
    else:
        said = "not measured: --no-widen" if "--no-widen" in flags else "over the rounds, past --max-widen-s 0.5"
    assert said in result.stderr


def test_a_changed_impl_traced_running_none_of_the_changed_files_is_not_added_and_the_ab_passes(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import graph ties gated-deltanet:quadratic to a change in the chunked form's file
    (planted); its call at the sweep's shape, traced on the CPU, runs none of it: it is not
    added, the merged runs record why, and compare counts it neither changed nor unmeasured."""
    chunked_file = "linbench/variants/gated/delta_chunked.py"
    planted = Touched({"gated-deltanet:quadratic": (chunked_file,)}, (), ())
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: planted)
    monkeypatch.setattr(changes, "code_changes", _import_time_changed)
    given: list[list[str]] = []
    base = (10.0, 10.05, 9.95, 10.02)

    def measured(job: AbJob, run_args: list[str], *more: object) -> dict[str, list[Path]]:
        given.append(run_args)
        return {"baseline": write_rounds(tmp_path / "b", base), "current": write_rounds(tmp_path / "c", base)}

    monkeypatch.setattr(AbJob, "measure", measured)
    args = ("--variant", "softmax:sdpa", "--seq", "64", "--heads", "2", "--dim", "16", "--device", "cpu")
    result = invoke("ab", "--baseline", "HEAD", *args, "--rounds", "3", "--out", tmp_path / "ab", "--json")
    assert result.exit_code == 0, result.output
    assert "gated-deltanet:quadratic" not in given[0]
    assert f"changed code: gated-deltanet:quadratic run(s) none of the changed code of {chunked_file}" in result.stderr
    report = json.loads(result.stdout)["changed_code"]
    assert (report["impls"], report["unmeasured"], report["not_run"]) == ([], [], ["gated-deltanet:quadratic"])
    recorded = RunStore(tmp_path / "ab" / "current").read_meta()["ab"]["not_run"]
    assert recorded == {"gated-deltanet:quadratic": [chunked_file]}


def _import_time_changed(root: Path, sha: str, paths: Iterable[str]) -> dict[str, CodeChange]:
    """The planted changes' code, which the checkout does not hold: each file's import-time
    code changed (code_diff.WHOLE), so every impl that runs the file runs the change."""
    return dict.fromkeys(paths, WHOLE)


def _gatedwrite_rounds(tmp_path: Path, times: tuple[float, ...]) -> dict[str, list[Path]]:
    """Rounds of the sweep widened to gated-deltanet:chunked: _rounds' point and that impl's."""
    sides = {}
    for side in ("baseline", "current"):
        folders = write_rounds(tmp_path / side, times)
        for folder in folders:
            row = result_row(1024, time_ms=times[0]) | {"device_name": "Test CPU", "samples": 10, "flops": 1e9}
            row |= {"variant": "gated-deltanet", "impl": "chunked"}
            RunStore(folder).append(row | {"time_ms_p20": times[0] * 0.99, "time_ms_p80": times[0] * 1.01})
        sides[side] = folders
    return sides


def test_an_ab_whose_rounds_disagree_is_inconclusive_and_names_its_own_flags(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three rounds that disagree by 15% (the most allowed reached) of a point whose code
    changed (planted): not decided, so exit 4, and the advice asks for the rounds that would
    decide it, not for run's processes."""
    base = (10.0, 11.5, 9.9)

    def measured(*args: object) -> dict[str, list[Path]]:
        return {"baseline": write_rounds(tmp_path / "b", base), "current": write_rounds(tmp_path / "c", base)}

    monkeypatch.setattr(AbJob, "measure", measured)
    planted = Touched({"cosine:chunked": ("linbench/variants/cosine/features.py",)}, (), ())
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: planted)
    monkeypatch.setattr(changes, "code_changes", _import_time_changed)
    args = ("--rounds", "3", "--max-rounds", "3", "--out", tmp_path / "ab", "--device", "cpu", "--json")
    result = invoke("ab", "--baseline", "HEAD", *args)
    assert result.exit_code == 4, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "inconclusive" and report["noisy"] == 1
    assert "run the A/B again with more rounds" in report["advice"][-1]
    assert any("not decided within the rounds run" in line for line in report["advice"])
    assert "--rounds 3 --max-rounds " in report["advice"][-1] and "--processes" not in report["advice"][-1]
    most = int(report["advice"][-1].split("--max-rounds ")[1].split()[0])
    assert most > 3  # the rounds its spread and ratio need, past the 3 it had
    protocol = RunStore(tmp_path / "ab" / "current").read_meta()["timing_protocol"]
    assert (protocol["processes"], protocol["max_processes"]) == (3, 3)


@pytest.mark.parametrize(
    ("planted", "status"),
    [
        (Touched({}, (), ()), 0),  # nothing changed
        (Touched({}, (), ("docs/gate.md", "tests/ab/test_job.py")), 0),  # no code a point runs
        (Touched({}, ("linbench/variants/variant.py",), ()), 4),  # a file every impl runs
        (Touched({}, (), ("linbench/runner/worker.py",)), 4),  # the runner, which every point runs
    ],
)
def test_a_point_left_open_holds_the_verdict_only_where_its_code_may_differ(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: Touched, status: int
) -> None:
    """The same undecided rounds of cosine:chunked: where its code is the same on both sides
    (no file it runs changed, nor any file every point runs), only the machine could move it,
    so it does not hold the verdict open, and the output says so; where a file every point
    runs changed, it does (exit 4)."""
    base = (10.0, 11.5, 9.9)

    def measured(*args: object) -> dict[str, list[Path]]:
        return {"baseline": write_rounds(tmp_path / "b", base), "current": write_rounds(tmp_path / "c", base)}

    monkeypatch.setattr(AbJob, "measure", measured)
    monkeypatch.setattr(changes, "changes_since", lambda root, sha: planted)
    args = ("--rounds", "3", "--max-rounds", "3", "--out", tmp_path / "ab", "--device", "cpu", "--json")
    result = invoke("ab", "--baseline", "HEAD", *args)
    assert result.exit_code == status, result.output
    report = json.loads(result.stdout)
    same = "1 point(s) not judged run the same code on both sides"
    assert any(line.startswith(same) for line in report["advice"]) is (status == 0)
    assert len(report["unjudged_same_code"]) == (1 if status == 0 else 0)
    assert len(report["unjudged"]) == (0 if status == 0 else 1)


@pytest.mark.slow
def test_a_real_ab_of_head_against_itself_measures_every_round_and_raises_no_false_alarm(
    tmp_path: Path, ab_temp: Path
) -> None:
    """The same code on both sides is never a regression: that is the gate's headline property.

    Exit 1 here is a false alarm, and fails the test. The gate calls a point a regression only
    past the 5% floor with its ratio's interval at the false-alarm rate wholly above 1, and one
    its 3 rounds leave undecided is ``noisy``: exit 4, inconclusive, which this test accepts, as
    a loaded machine often makes it, where this checkout holds uncommitted changes to code the
    points run; with none, both sides run the same code and an open point does not hold the
    verdict (exit 0). The rounds alternate sides (ABBA), so a machine that
    drifts during the job moves both alike. As in the CPU recipe, each worker
    runs one torch thread and is judged on its CPU time, which preemption by other jobs does
    not add to. What else this asserts: every round of both sides ran and merged, nothing
    broke, nothing is left behind."""
    rounds = ("--rounds", ROUNDS, "--max-rounds", ROUNDS)  # no extra rounds: the test's time stays bounded
    # --no-widen: the points stay this sweep's whatever this checkout holds uncommitted.
    flags = (*SWEEP, "--threads", "1", "--no-widen", "--out", tmp_path / "ab", "--json")
    argv = linbench_argv("ab", "--baseline", "HEAD", *rounds, *flags)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
    # 0 pass or 4 inconclusive (a point whose 3 rounds disagree is too noisy to judge); never 1
    # (a false alarm), 2 or a crash.
    assert result.returncode in (0, 4), result.stdout + result.stderr
    assert json.loads(result.stdout)["verdict"] in ("pass", "inconclusive"), result.stdout
    assert "Traceback" not in result.stderr
    assert not left_behind(ab_temp)
    for side in ("baseline", "current"):
        folder = tmp_path / "ab" / side
        rounds = Counter(tuple(row[c] for c in ("seq", "process")) for row in _read(folder / "processes.csv"))
        assert sorted(rounds) == [(seq, str(p)) for seq in ("256", "512") for p in range(ROUNDS)], side
        assert set(rounds.values()) == {1}
        results = _read(folder / "results.csv")
        assert [row["status"] for row in results] == ["ok", "ok"], side
        assert {row["processes"] for row in results} == {str(ROUNDS)}
        assert str(folder) in result.stderr  # where the merged folders are
    assert "broken" not in set(_strings(json.loads(result.stdout)))
    assert [line.split(":")[0] for line in result.stderr.splitlines() if line.startswith("round ")] == [
        f"round {r}/{ROUNDS}" for r in range(1, ROUNDS + 1)
    ]


def test_each_round_gets_only_the_run_flags_given_with_paths_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    values: dict[str, Any] = {option.name: option.parameter.default for option in ab_cmd.RUN_OPTIONS}
    assert ab_cmd.run_arguments(values) == []  # nothing given: an older revision's defaults
    values |= {"variant": ["cosine:chunked", "softmax"], "against": ["softmax:sdpa"], "causal": True}
    values |= {"budget_s": 0.1, "plugin": [Path("mine.py")]}
    assert ab_cmd.run_arguments(values) == [
        *("--variant", "cosine:chunked", "--variant", "softmax", "--against", "softmax:sdpa", "--causal"),
        *("--plugin", str(tmp_path / "mine.py"), "--budget-s", "0.1"),
    ]


def test_ab_takes_every_compare_option_and_none_of_run_s_that_a_round_must_not_get() -> None:
    import typer.main

    from linbench.cli import app

    group = typer.main.get_command(app)
    ab = {opt for param in group.commands["ab"].params for opt in param.opts}
    compare = {opt for param in group.commands["compare"].params for opt in param.opts if opt.startswith("-")}
    assert compare - {"--changed-since"} <= ab  # ab gives compare the baseline revision itself
    assert "--changed-since" not in ab
    assert not {"--processes", "--max-processes", "--resume", "--dry-run", "--mix", "--allow-failures"} & ab
    assert {"--baseline", "--against", "--rounds", "--out", "--suite", "--device", "--variant"} <= ab


def test_a_sweep_the_baseline_refuses_stops_the_ab_with_its_message_and_removes_the_worktree(
    invoke: Invoke, tmp_path: Path, ab_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Path] = []  # the temporary folders made, so that "nothing left" is not vacuous
    make = tempfile.mkdtemp

    def recorded(*args: Any, **kwargs: Any) -> str:
        made.append(Path(make(*args, **kwargs)))
        return str(made[-1])

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    result = invoke("ab", "--baseline", "HEAD", "--out", tmp_path / "ab", "--device", "cpu", "--seq", "banana")
    assert [folder.parent for folder in made if folder.name.startswith("linbench-ab-")] == [ab_temp]
    assert result.exit_code == 2, result.output
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("linbench: error:")]
    assert "the baseline side's round 1 refused the run: " in error and "banana" in error
    assert not left_behind(ab_temp)
    assert not (tmp_path / "ab" / "current").exists()  # the current side never ran
