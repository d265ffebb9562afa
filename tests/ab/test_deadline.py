"""The hard deadline of an A/B's rounds (ab/deadline.py), against stand-in trees whose rounds
never end and ignore SIGINT and SIGTERM (as a hung worker may): a round running at the
deadline is stopped, its process group with it, whether it runs as a process or forked by its
side's round server, round 1 included; a ``--help`` probe that hangs is stopped too. Only the
outcome is asserted (the processes are gone, what is raised, what it says), never how long
anything took: the deadlines are a second or two, and the stand-ins would run for ever. CPU only."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from linbench.ab import rounds
from linbench.ab.deadline import Deadline, DeadlineError
from linbench.ab.rounds import RoundError, RoundResult, Side, run_help, run_rounds
from linbench.ab.spelling import knows_against

# A round (or a --help) that never ends: it ignores Ctrl-C and SIGTERM, starts a worker of its
# own in its process group (as linbench run's fork server and workers are), notes both pids.
ENDLESS = """
import os, signal, subprocess, sys, time, pathlib
for signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(signum, signal.SIG_IGN)
stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
worker = subprocess.Popen([sys.executable, "-c", stubborn])
pathlib.Path(os.environ["AB_TEST_PIDS"]).write_text(f"{os.getpid()} {worker.pid}")
while True:
    time.sleep(1)
"""
# A side's round server that forks each round into a session of its own, as the real one does
# (linbench/cli/round_server.py), the round never ending; with AB_TEST_MUTE it never answers.
ENDLESS_SERVER = """
import json, os, signal, sys, time, pathlib
pathlib.Path(os.environ["AB_TEST_SERVER"]).write_text(str(os.getpid()))
for line in sys.stdin:
    if os.environ.get("AB_TEST_MUTE"):
        while True:
            time.sleep(1)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        pathlib.Path(os.environ["AB_TEST_PIDS"]).write_text(f"{os.getpid()}")
        while True:
            time.sleep(1)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"exit": os.waitstatus_to_exitcode(status)}), flush=True)
"""


def _tree(root: Path, name: str, server: bool = False) -> Path:
    package = root / name / "linbench"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(ENDLESS)
    (package / "cli" / "__init__.py").write_text("")
    if server:
        (package / "cli" / "round_server.py").write_text(ENDLESS_SERVER)
    return root / name


@pytest.fixture
def pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the stand-ins note their pids."""
    monkeypatch.setenv("AB_TEST_PIDS", str(tmp_path / "pids"))
    monkeypatch.setenv("AB_TEST_SERVER", str(tmp_path / "server"))
    return tmp_path / "pids"


def _noted(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie has): SIGKILL is sent by then, the kernel ends it."""
    for _ in range(600):  # reaping on a loaded machine can lag; the process itself is dead
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False


def _two_sides(tmp_path: Path, server: bool = False) -> dict[str, Side]:
    return {name: Side(name, _tree(tmp_path / "trees", name, server)) for name in ("baseline", "current")}


def test_round_one_running_at_the_deadline_is_stopped_with_its_workers(tmp_path: Path, pids: Path) -> None:
    """Round 1 has nothing to estimate from: only the deadline can stop it."""
    deadline = Deadline.of(time.monotonic(), 2.0)
    with pytest.raises(DeadlineError, match=r"deadline stopped the baseline side's round 1") as stopped:
        run_rounds(_two_sides(tmp_path), 3, [], tmp_path / "ab", deadline=deadline)
    assert stopped.value.index == 1 and stopped.value.complete == 0
    assert stopped.value.folders == {"baseline": [], "current": []}
    round_pid, worker_pid = _noted(pids)
    assert _gone(round_pid) and _gone(worker_pid)


def test_a_round_forked_by_its_round_server_is_stopped_at_the_deadline(tmp_path: Path, pids: Path) -> None:
    deadline = Deadline.of(time.monotonic(), 2.0)
    with pytest.raises(DeadlineError, match=r"round 1"):
        run_rounds(_two_sides(tmp_path, server=True), 3, [], tmp_path / "ab", deadline=deadline)
    (round_pid,) = _noted(pids)
    (server_pid,) = _noted(tmp_path / "server")
    assert _gone(round_pid) and _gone(server_pid)


def test_a_round_server_that_never_answers_is_stopped_at_the_deadline(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AB_TEST_MUTE", "1")
    deadline = Deadline.of(time.monotonic(), 2.0)
    with pytest.raises(DeadlineError, match=r"round 1"):
        run_rounds(_two_sides(tmp_path, server=True), 3, [], tmp_path / "ab", deadline=deadline)
    (server_pid,) = _noted(tmp_path / "server")
    assert _gone(server_pid) and not pids.exists()  # it forked nothing


def test_a_stopped_round_leaves_the_rounds_complete_before_it_and_none_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 2's first side (current) finished, its second was stopped: round 1 of both sides
    is kept, round 2 of neither, so the merge sees whole rounds of both."""

    def run_one(side: Side, index: int, *args: object) -> RoundResult:
        if index == 2 and side.name == "baseline":
            raise DeadlineError(f"the {side.name} side's round {index}", index)
        return RoundResult(side.name, index, tmp_path / f"{side.name}-{index}", 1.0, {"ok": 1})

    monkeypatch.setattr(rounds, "run_one", run_one)
    monkeypatch.setattr(rounds, "round_one", lambda folders: (set(), set()))
    sides = {name: Side(name, tmp_path) for name in ("baseline", "current")}
    with pytest.raises(DeadlineError) as stopped:
        run_rounds(sides, 3, [], tmp_path / "ab")
    assert stopped.value.folders == {"baseline": [tmp_path / "baseline-1"], "current": [tmp_path / "current-1"]}
    assert (stopped.value.index, stopped.value.complete) == (2, 1)


def test_a_baseline_whose_help_hangs_is_one_line_and_stopped(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a deadline the probe's own limit (PROBE_S) ends it: a RoundError (exit 2)."""
    monkeypatch.setattr(rounds, "PROBE_S", 1.0)
    side = Side("baseline", _tree(tmp_path, "baseline"))
    with pytest.raises(RoundError, match=r"^the baseline side's `linbench run --help` did not answer within 1 s: "):
        run_help(side)
    probe, worker = _noted(pids)
    assert _gone(probe) and _gone(worker)
    with pytest.raises(RoundError, match=r"did not answer within 1 s"):
        knows_against(side.tree, rounds.side_env(side.tree))


def test_a_help_probe_cut_short_by_the_deadline_is_the_deadline_s(tmp_path: Path, pids: Path) -> None:
    side = Side("baseline", _tree(tmp_path, "baseline"))
    with pytest.raises(DeadlineError, match=r"stopped the baseline side's `linbench run --help`, before round 1"):
        run_help(side, Deadline.of(time.monotonic(), 2.0))
    assert all(_gone(pid) for pid in _noted(pids))


def test_the_deadline_leaves_the_verdict_its_closing_time() -> None:
    """The closing time is the budget's (CLOSING_S) but a quarter of a short one at most, and a
    stopped round gets a third of it to end before its group is killed."""
    long, short = Deadline.of(0.0, 270.0), Deadline.of(0.0, 2.0)
    assert long is not None and short is not None and Deadline.of(0.0, None) is None
    assert (long.at, long.grace_s) == (240.0, 10.0)
    assert (short.at, short.grace_s) == (1.5, pytest.approx(0.5 / 3))
