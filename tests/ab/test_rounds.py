"""The rounds of an A/B, run against stand-in trees whose ``python -m linbench`` writes a tiny
run folder (or refuses, as an older revision does an unknown flag): the order, the
environment each side gets and the errors, in well under a second per round (no device:
the stand-ins measure nothing)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from result_rows import result_row

from linbench.ab.job import rounds_command
from linbench.ab.rounds import RoundError, Side, can_narrow, round_order, run_rounds, side_env, with_processes
from linbench.results.store import RunStore

# A stand-in for `linbench run`: it notes which tree ran it and with what, then makes a run
# folder under --out the way the real one does (results.csv, samples.csv, meta.json).
FAKE_RUN = """
import json, os, sys, pathlib
args = sys.argv[1:]
if "--help" in args:  # a tree with a NARROWS file takes --only-points, as today's linbench does
    print("--only-points FILE" if pathlib.Path("NARROWS").exists() else "--seq R")
    sys.exit(0)
if "--refuse" in args:
    print("linbench: error: No such option: --refuse; see linbench run --help", file=sys.stderr)
    sys.exit(2)
if "--crash" in args:
    raise SystemExit("Traceback: something broke")
out = pathlib.Path(args[args.index("--out") + 1])
with open(os.environ["AB_TEST_LOG"], "a") as log:
    log.write(pathlib.Path.cwd().name + " " + " ".join(args) + "\\n")
folder = out / f"run-{len(list(out.glob('run-*')))}"
folder.mkdir()
for name in ("results.csv", "samples.csv"):
    (folder / name).write_text("variant,status\\n")
if os.environ.get("AB_TEST_RESULTS"):  # the points this round measured, as a real round writes them
    (folder / "results.csv").write_text(pathlib.Path(os.environ["AB_TEST_RESULTS"]).read_text())
(folder / "meta.json").write_text(json.dumps({"status": "complete"}))
"""


SUITES = Path(__file__).parents[2] / "suites"


def _tree(root: Path, name: str) -> Path:
    package = root / name / "linbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(FAKE_RUN)
    return root / name


@pytest.fixture
def sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Side]:
    monkeypatch.setenv("AB_TEST_LOG", str(tmp_path / "calls.log"))
    return {name: Side(name, _tree(tmp_path / "trees", name)) for name in ("baseline", "current")}


def test_rounds_alternate_abba() -> None:
    assert [round_order(index) for index in range(1, 5)] == [
        ("baseline", "current"),
        ("current", "baseline"),
        ("baseline", "current"),
        ("current", "baseline"),
    ]


def test_each_side_runs_its_own_tree_with_the_given_flags_quiet_into_its_rounds(
    sides: dict[str, Side], tmp_path: Path
) -> None:
    heard: list[int] = []
    folders = run_rounds(sides, 3, ["--seq", "256"], tmp_path / "ab", lambda index, results: heard.append(index))
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [call.split()[0] for call in calls] == ["baseline", "current", "current", "baseline", "baseline", "current"]
    assert calls[0].split()[1:] == [
        "run",
        "--seq",
        "256",
        "--quiet",
        "--yes",
        "--out",
        str(tmp_path / "ab/baseline/rounds"),
    ]
    assert heard == [1, 2, 3]
    assert [p.name for p in folders["baseline"]] == ["run-0", "run-1", "run-2"]
    assert all(p.parent == tmp_path / "ab" / "current" / "rounds" for p in folders["current"])
    assert (tmp_path / "ab" / "baseline" / "rounds" / "round-2.log").is_file()


def test_a_round_the_revision_refuses_stops_with_its_message(sides: dict[str, Side], tmp_path: Path) -> None:
    with pytest.raises(RoundError, match=r"the baseline side's round 1 refused the run: No such option: --refuse"):
        run_rounds(sides, 3, ["--refuse"], tmp_path / "ab")
    assert not (tmp_path / "calls.log").exists()  # the current side never ran


def test_a_round_that_crashes_stops_with_its_last_line(sides: dict[str, Side], tmp_path: Path) -> None:
    with pytest.raises(RoundError, match=r"round 1 failed \(exit 1\): Traceback: something broke"):
        run_rounds(sides, 1, ["--crash"], tmp_path / "ab")


def test_a_side_finds_its_own_package_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert side_env(tmp_path)["PYTHONPATH"] == os.pathsep.join([str(tmp_path), "/elsewhere"])
    monkeypatch.delenv("PYTHONPATH")
    assert side_env(tmp_path)["PYTHONPATH"] == str(tmp_path)


def test_more_rounds_follow_while_asked_for_up_to_the_most(sides: dict[str, Side], tmp_path: Path) -> None:
    asked: list[int] = []

    def another(folders: dict[str, list[Path]]) -> list[tuple[str, ...]]:
        asked.append(len(folders["baseline"]))
        return [("cosine", "kernel")] if len(folders["current"]) < 4 else []

    folders = run_rounds(sides, 2, [], tmp_path / "ab", most=6, another=another)
    assert [len(folders[side]) for side in ("baseline", "current")] == [4, 4]
    assert asked == [2, 3, 4]  # asked after the rounds given, never before
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [call.split()[0] for call in calls][4:] == ["baseline", "current", "current", "baseline"]  # still ABBA
    assert "--only-points" not in (tmp_path / "calls.log").read_text()  # not asked to narrow
    capped = run_rounds(sides, 1, [], tmp_path / "capped", most=3, another=lambda folders: [("cosine", "kernel")])
    assert len(capped["baseline"]) == 3


def test_narrowed_rounds_past_those_asked_for_measure_only_the_points_named(
    sides: dict[str, Side], tmp_path: Path
) -> None:
    needed = [("cosine", "kernel", "2048"), ("softmax", "sdpa", "1024")]
    run_rounds(sides, 1, ["--seq", "1k"], tmp_path / "ab", most=2, another=lambda folders: needed, narrow=True)
    first, _, third, _ = (tmp_path / "calls.log").read_text().splitlines()
    assert "--only-points" not in first  # a round asked for measures every point
    args = third.split()[1:]
    points = Path(args[args.index("--only-points") + 1])
    assert points == tmp_path / "ab" / "round-2-points.csv" and args[1:3] == ["--seq", "1k"]
    assert points.read_text().splitlines()[1:] == ["cosine,kernel,2048", "softmax,sdpa,1024"]


def test_a_narrowed_round_measures_its_points_in_the_processes_asked_for(
    sides: dict[str, Side], tmp_path: Path
) -> None:
    needed = [("cosine", "kernel", "2048")]
    one = ["--seq", "1k", "--processes", "1", "--max-processes", "1"]
    run_rounds(sides, 1, one, tmp_path / "ab", most=2, another=lambda folders: needed, narrow=True, processes=lambda: 6)
    first, _, third, fourth = (tmp_path / "calls.log").read_text().splitlines()
    assert first.split()[2:8] == one  # the rounds asked for: one process a point
    for call in (third, fourth):  # both sides of the narrowed round, in place of the one
        args = call.split()[1:]
        assert args.count("--processes") == 1 and args[args.index("--processes") + 1] == "6"
        assert args[args.index("--max-processes") + 1] == "6" and args[1:3] == ["--seq", "1k"]


def test_one_process_a_point_leaves_a_round_s_words_as_they_are() -> None:
    words = ["--seq", "1k", "--processes", "1", "--max-processes", "1"]
    assert with_processes(words, 1) == words
    assert with_processes(words, 4) == ["--seq", "1k", "--processes", "4", "--max-processes", "4"]
    assert with_processes(["--seq", "1k"], 3) == ["--seq", "1k", "--processes", "3", "--max-processes", "3"]


def test_a_side_can_narrow_where_its_run_names_the_flag(sides: dict[str, Side]) -> None:
    assert not can_narrow(sides["baseline"])  # a revision from before --only-points
    (sides["current"].tree / "NARROWS").touch()
    assert can_narrow(sides["current"])


def test_a_decode_suite_s_rounds_run_linbench_decode(sides: dict[str, Side], tmp_path: Path) -> None:
    decode = {name: replace(side, command="decode") for name, side in sides.items()}
    run_rounds(decode, 1, ["--suite", "gate-decode-cpu.toml"], tmp_path / "ab")
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [call.split()[1] for call in calls] == ["decode", "decode"]
    assert rounds_command(SUITES / "gate-decode-cpu.toml") == "decode"
    assert rounds_command(SUITES / "gate-cpu.toml") == rounds_command(None) == "run"


def test_rounds_after_the_first_get_the_later_words(tmp_path: Path, sides: dict[str, Side]) -> None:
    """``--no-check`` from round 2 on: round 1 checked every point against its reference."""
    run_rounds(sides, 2, ["--seq", "1k"], tmp_path / "ab", later=["--no-check"])
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert ["--no-check" in call for call in calls] == [False, False, True, True]


# A round that never ends: it starts a worker of its own (in its process group, as linbench run's
# fork server and workers are), notes the worker's pid, and waits.
ENDLESS_RUN = """
import os, subprocess, sys, time, pathlib
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
pathlib.Path(os.environ["AB_TEST_PIDS"]).write_text(f"{os.getpid()} {worker.pid}")
time.sleep(120)
"""
# An A/B stopped by SIGTERM: the baseline's worktree made, a round running in it.
STOPPED_AB = """
import sys
from pathlib import Path
from linbench.ab.rounds import Side, run_rounds, stopping_on_signals
from linbench.ab.worktree import detached_worktree
repo, fake, out = map(Path, sys.argv[1:4])
with stopping_on_signals(), detached_worktree(repo, "HEAD") as tree:
    (tree / "linbench").mkdir()
    (tree / "linbench" / "__init__.py").write_text("")
    (tree / "linbench" / "__main__.py").write_text(fake.read_text())
    run_rounds({"baseline": Side("baseline", tree)}, 1, [], out)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")  # a zombie is gone


def test_sigterm_stops_the_round_its_workers_and_removes_the_worktree(tmp_path: Path) -> None:
    """What CI's cancellation sends: the A/B ends its round and every process the round started,
    and git forgets the baseline's worktree (CPU; no torch: stand-in processes)."""
    import signal
    import subprocess
    import sys
    import time

    from linbench.ab.worktree import registered_worktrees

    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)
    fake = tmp_path / "endless.py"
    fake.write_text(ENDLESS_RUN)
    pids = tmp_path / "pids"
    env = os.environ | {"AB_TEST_PIDS": str(pids)}
    argv = [sys.executable, "-c", STOPPED_AB, str(repo), str(fake), str(tmp_path / "ab")]
    ab = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pids.exists() or len(pids.read_text().split()) < 2:
        assert time.monotonic() < deadline and ab.poll() is None, ab.stderr.read() if ab.stderr else ""
        time.sleep(0.05)
    assert len(registered_worktrees(repo)) == 2
    ab.send_signal(signal.SIGTERM)
    _, stderr = ab.communicate(timeout=60)
    assert "KeyboardInterrupt: stopped by SIGTERM" in stderr
    round_pid, worker_pid = map(int, pids.read_text().split())
    assert not _alive(round_pid) and not _alive(worker_pid)
    assert registered_worktrees(repo) == [repo]


def test_the_rounds_asked_for_measure_only_the_points_given(sides: dict[str, Side], tmp_path: Path) -> None:
    """Added impls at the sweep's shortest length only (widen_cost.first_points): from round 1,
    into an A/B folder that does not exist yet."""
    only = [("kda", "quadratic", "256"), ("softmax", "sdpa", "256")]
    run_rounds(sides, 1, ["--seq", "1k"], tmp_path / "new" / "ab", narrow=True, only=only)
    first, _ = (tmp_path / "calls.log").read_text().splitlines()
    args = first.split()[1:]
    points = Path(args[args.index("--only-points") + 1])
    assert points.read_text().splitlines()[1:] == ["kda,quadratic,256", "softmax,sdpa,256"]


def test_the_rounds_asked_for_stop_where_another_is_not_affordable(sides: dict[str, Side], tmp_path: Path) -> None:
    asked: list[int] = []

    def affordable() -> bool:
        asked.append(1)
        return len(asked) < 2  # round 2 fits, round 3 does not

    folders = run_rounds(sides, 3, [], tmp_path / "ab", affordable=affordable)
    assert [len(folders[side]) for side in ("baseline", "current")] == [2, 2] and len(asked) == 2


def test_the_rounds_asked_for_leave_out_a_point_that_failed_in_round_one(
    sides: dict[str, Side], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compile that timed out in round 1 keeps that failure whatever later rounds measure
    (merge.py): rounds 2 and 3 measure the other points only, and none once every point failed."""
    store = RunStore.create(tmp_path / "made", "round")
    store.append(result_row(256) | {"device_name": "Test CPU"})
    store.append(result_row(512, status="timeout") | {"device_name": "Test CPU", "error": "past --timeout-s"})
    monkeypatch.setenv("AB_TEST_RESULTS", str(store.path / "results.csv"))
    run_rounds(sides, 3, [], tmp_path / "ab", narrow=True)
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == 6 and "--only-points" not in calls[0] + calls[1]
    for call in calls[2:]:
        args = call.split()[1:]
        kept = Path(args[args.index("--only-points") + 1]).read_text().splitlines()[1:]
        assert len(kept) == 1 and ",256" in kept[0] and ",512" not in kept[0], kept

    failing = RunStore.create(tmp_path / "all-failed", "round")
    failing.append(result_row(512, status="timeout") | {"device_name": "Test CPU", "error": "past --timeout-s"})
    monkeypatch.setenv("AB_TEST_RESULTS", str(failing.path / "results.csv"))
    folders = run_rounds(sides, 3, [], tmp_path / "ab-failed", narrow=True)
    assert [len(folders[side]) for side in ("baseline", "current")] == [1, 1]  # nothing left to measure


def test_the_rounds_asked_for_leave_out_a_point_deferred_after_round_one_and_later_rounds_take_it(
    sides: dict[str, Side], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point too dear for the rounds every point gets (sequential.py's outsized, asked after
    round 1) is left out of rounds 2 and 3; a later round measures it where it is named."""
    from linbench.results.record import row_key

    store = RunStore.create(tmp_path / "made", "round")
    store.append(result_row(256) | {"device_name": "Test CPU"})
    store.append(result_row(512) | {"device_name": "Test CPU"})
    monkeypatch.setenv("AB_TEST_RESULTS", str(store.path / "results.csv"))
    dear = row_key(result_row(512) | {"device_name": "Test CPU"})
    asked: list[int] = []

    def another(folders: dict[str, list[Path]]) -> set[tuple[str, ...]]:
        asked.append(len(folders["baseline"]))
        return {dear} if len(asked) == 1 else set()

    run_rounds(sides, 3, [], tmp_path / "ab", most=5, another=another, narrow=True, deferred=lambda: {dear})
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == 8 and "--only-points" not in calls[0] + calls[1]

    def measured(call: str) -> list[str]:
        args = call.split()[1:]
        return Path(args[args.index("--only-points") + 1]).read_text().splitlines()[1:]

    for call in calls[2:6]:  # rounds 2 and 3: every point but the deferred one
        kept = measured(call)
        assert len(kept) == 1 and ",256" in kept[0], kept
    for call in calls[6:]:  # round 4, asked for by another: the deferred point
        kept = measured(call)
        assert len(kept) == 1 and ",512" in kept[0], kept
