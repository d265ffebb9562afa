"""A side's round server (linbench/ab/round_server.py, driving linbench/cli/round_server.py) as
``linbench ab`` drives it: real rounds of ``linbench`` forked from one process in this checkout,
on the CPU (a round of one tiny CPU point; nothing is judged on its time)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from linbench.ab.round_server import RoundServer, group_gone
from linbench.ab.rounds import side_env

ROOT = Path(__file__).resolve().parents[2]
POINT = ["run", "--variant", "cosine:chunked", "--no-against", "--seq", "64", "--batch", "1", "--heads", "1"]
POINT += ["--dim", "16", "--device", "cpu", "--warmup-s", "0", "--no-check", "--quiet", "--yes"]
TINY = [*POINT, "--budget-s", "0.01"]


@pytest.fixture
def server() -> Iterator[RoundServer]:
    started = RoundServer(ROOT, side_env(ROOT))
    yield started
    started.close()


def test_this_checkout_serves_its_rounds_and_a_tree_without_the_module_does_not(tmp_path: Path) -> None:
    assert RoundServer.serves(ROOT)
    assert not RoundServer.serves(tmp_path)  # a revision from before the server


def test_each_round_is_a_run_of_its_own_and_a_refused_one_says_why(server: RoundServer, tmp_path: Path) -> None:
    for index in (1, 2):
        log = tmp_path / f"round-{index}.log"
        assert server.run([*TINY, "--out", str(tmp_path / "rounds")], log) == 0
        assert "1 ok" in log.read_text()
    assert len(list((tmp_path / "rounds").iterdir())) == 2  # a run folder a round
    refused = tmp_path / "refused.log"
    assert server.run(["run", "--no-such-flag"], refused) == 2
    assert "No such option" in refused.read_text()


def test_an_interrupted_round_is_stopped_with_its_group(server: RoundServer, tmp_path: Path) -> None:
    assert server.run([*TINY, "--out", str(tmp_path / "warm")], tmp_path / "warm.log") == 0  # imports done

    def interrupt(_signum: int, _frame: object) -> None:  # as ab's SIGTERM handler does
        if server.round_pid is None:  # not forked yet (a busy machine): ask again shortly
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            return
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    # A step loop over 4k tokens, 200 repetitions: tens of seconds.
    slow = ["--variant", "cosine:recurrent", "--seq", "4096", "--budget-s", "60", "--out", str(tmp_path / "long")]
    long_round = ["run", "--no-against", *POINT[6:], *slow]
    try:
        with pytest.raises(KeyboardInterrupt):
            server.run(long_round, tmp_path / "long.log")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert server.round_pid is not None
    # The round, its fork server and workers: all gone. A process SIGKILLed on a busy machine can
    # take a moment to be reaped, so this waits for the group to empty, up to 10 s: far less than
    # the round left alone would still run (200 calls of a step loop, 20 s or more).
    assert _empties(server.round_pid, within_s=10.0)


def _empties(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while not group_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
