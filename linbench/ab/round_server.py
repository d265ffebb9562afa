"""The client side of a side's round server (linbench/cli/round_server.py): one process in the
side's tree that imported torch and linbench once and forks each of its rounds, so a round of
an A/B does not pay a new interpreter's imports. rounds.py runs a side's rounds through it where
the side's tree has one."""

from __future__ import annotations

import json
import os
import select
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


class RoundOverdueError(RuntimeError):
    """A round still running at its deadline, stopped (ab/deadline.py; rounds.py names it)."""


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
        self._pending = b""  # what the server wrote past the last line read
        self._process = subprocess.Popen(
            argv, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip

    @staticmethod
    def serves(tree: Path) -> bool:
        """Whether the linbench tree ``tree`` has a round server (a revision from before it does not)."""
        return (tree / Path(*SERVER_MODULE.split("."))).with_suffix(".py").is_file()

    def run(self, words: Sequence[str], log: Path, until: float | None = None, grace_s: float = STOP_GRACE_S) -> int:
        """``linbench WORDS`` forked by the server, its output to ``log``; its exit status.
        Interrupted meanwhile (even before the round's pid came back), or still running at
        ``until`` (time.monotonic(); RoundOverdueError), the server is killed first, so it forks
        nothing more, and the round is stopped as run_in_own_group stops one, its group killed
        ``grace_s`` after its Ctrl-C."""
        self.round_pid = None
        try:
            self.round_pid = int(self._ask({"argv": list(words), "log": str(log)}, until)["pid"])
            return int(self._read(until)["exit"])
        except BaseException:
            self._process.kill()
            self._process.wait()
            if self.round_pid is None:
                started = [json.loads(line) for line in self._rest().splitlines() if line.strip()]
                self.round_pid = next((int(m["pid"]) for m in started if "pid" in m), None)
            if (pid := self.round_pid) is not None:
                stop_process_group(pid, lambda: group_gone(pid), grace_s)
            raise

    def close(self, grace_s: float = STOP_GRACE_S) -> None:
        """End the server: no more requests, then killed if it has not ended ``grace_s`` later."""
        with suppress(OSError, ValueError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _ask(self, request: dict[str, Any], until: float | None = None) -> dict[str, Any]:
        stdin = self._process.stdin
        if stdin is None:
            raise RoundServerError("the round server has no input")
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        return self._read(until)

    def _read(self, until: float | None = None) -> dict[str, Any]:
        """The server's next message; RoundOverdueError when none came by ``until`` (None: wait)."""
        line = self._line(until)
        if not line:
            raise RoundServerError(f"the round server in {self._tree} ended (exit {self._process.poll()})")
        return dict(json.loads(line))

    def _line(self, until: float | None) -> str:
        """The server's next line ("" once it ended), read from its pipe as it comes, so a wait
        can end at ``until`` (a buffered readline would block past it)."""
        fd = self._output()
        while b"\n" not in self._pending:
            wait = None if until is None else max(until - time.monotonic(), 0.0)
            if wait is not None and not select.select([fd], [], [], wait)[0]:
                raise RoundOverdueError(f"still running at its deadline, after {self._tree}'s round server forked it")
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace")

    def _rest(self) -> str:
        """Everything the server wrote that was not read, to its end (it has ended)."""
        fd = self._output()
        chunks = [self._pending]
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        self._pending = b""
        return b"".join(chunks).decode(errors="replace")

    def _output(self) -> int:
        if self._process.stdout is None:
            raise RoundServerError("the round server has no output")
        return self._process.stdout.fileno()


def stop_process_group(pid: int, ended: Callable[[], bool], grace_s: float = STOP_GRACE_S) -> None:
    """Ctrl-C to the process group ``pid`` leads, up to ``grace_s`` for ``ended`` to say it
    has, then SIGKILL to whatever the group still holds (its workers included, however it
    ended). For a round started as a process (rounds.stop_group) and one its server forked."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGINT)
    deadline = time.monotonic() + grace_s
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
