"""The client side of a side's round server (linbench/cli/round_server.py): one process in the
side's tree that imported torch and linbench once and forks each of its rounds, so a round of
an A/B does not pay a new interpreter's imports. rounds.py runs a side's rounds through it where
the side's tree has one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

# A round stopped (the A/B interrupted) gets this long to end its workers after its Ctrl-C;
# then everything left in its process group is killed.
STOP_GRACE_S = 10.0


class RoundServerError(RuntimeError):
    """The round server ended before it answered (rounds.py names the side and round)."""


SERVER_MODULE = "linbench.cli.round_server"


class RoundServer:
    """A side's round server (linbench/cli/round_server.py): one process in the side's tree
    that has imported torch and linbench once and forks each round from itself, so a round
    does not pay their import (about 4.5 s a side on the 2-core CI machine: a round of 3 gate
    points took 1.8-2.1 s forked, 4.6-7.5 s as a new process)."""

    def __init__(self, tree: Path, env: dict[str, str]) -> None:
        argv = [sys.executable, "-m", SERVER_MODULE]
        self._tree = tree
        self.round_pid: int | None = None  # the round running or last run
        self._process = subprocess.Popen(
            argv, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip

    @staticmethod
    def serves(tree: Path) -> bool:
        """Whether the linbench tree ``tree`` has a round server (a revision from before it does not)."""
        return (tree / Path(*SERVER_MODULE.split("."))).with_suffix(".py").is_file()

    def run(self, words: Sequence[str], log: Path) -> int:
        """``linbench WORDS`` forked by the server, its output to ``log``; its exit status.
        Interrupted meanwhile (even before the round's pid came back), the server is killed
        first, so it forks nothing more, and the round is stopped as run_in_own_group stops one."""
        self.round_pid = None
        try:
            self.round_pid = int(self._ask({"argv": list(words), "log": str(log)})["pid"])
            return int(self._read()["exit"])
        except BaseException:
            self._process.kill()
            self._process.wait()
            if self.round_pid is None and self._process.stdout is not None:
                started = [json.loads(line) for line in self._process.stdout.read().splitlines() if line.strip()]
                self.round_pid = next((int(m["pid"]) for m in started if "pid" in m), None)
            if (pid := self.round_pid) is not None:
                stop_process_group(pid, lambda: group_gone(pid))
            raise

    def close(self) -> None:
        """End the server: no more requests, then killed if it has not ended."""
        with suppress(OSError, ValueError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        stdin = self._process.stdin
        if stdin is None:
            raise RoundServerError("the round server has no input")
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        line = self._process.stdout.readline() if self._process.stdout is not None else ""
        if not line:
            raise RoundServerError(f"the round server in {self._tree} ended (exit {self._process.poll()})")
        return dict(json.loads(line))


def stop_process_group(pid: int, ended: Callable[[], bool]) -> None:
    """Ctrl-C to the process group ``pid`` leads, up to STOP_GRACE_S for ``ended`` to say it
    has, then SIGKILL to whatever the group still holds (its workers included, however it
    ended). For a round started as a process (rounds.stop_group) and one its server forked."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGINT)
    deadline = time.monotonic() + STOP_GRACE_S
    while not ended() and time.monotonic() < deadline:
        time.sleep(0.05)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def group_gone(pid: int) -> bool:
    """Whether no process is left in the process group ``pid``."""
    try:
        os.killpg(pid, 0)
    except (ProcessLookupError, PermissionError):
        return True
    return False
