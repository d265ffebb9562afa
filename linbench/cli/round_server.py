"""One side's rounds of an A/B served from one process: ``python -m linbench.cli.round_server``.

An A/B runs each side's rounds as ``linbench run`` in that side's tree (linbench/ab/rounds.py,
through the client in linbench/ab/round_server.py). A fresh ``python -m linbench run`` spends
about 4.5 s a round importing Python, torch and linbench on the 2-core CI machine, against
0.25 s for a process of a gate point, so a round of the last few open points was mostly
start-up, twice a round. This server imports them once, then forks each round from itself: the
fork runs the command line it is given as ``linbench`` would, in a session of its own (so
stopping it reaches its workers, as a round's process group did), its output into the round's
log. A round of 3 gate points took 1.8-2.1 s so, against 4.6-7.5 s as a new process. The server
runs no torch op and starts no thread before it forks (the run's own fork server,
linbench/runner/zygote.py, asks the same of the command's process).

The protocol is a JSON object a line. ab writes ``{"argv": [...], "log": path}``; the server
answers ``{"pid": N}`` as the round starts and ``{"exit": code}`` when it ends (a signal's
negative number, as subprocess reports it). End of input ends the server.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO


def warm() -> None:
    """Import what every round imports: the command line and the runner (torch with it)."""
    import linbench.cli
    import linbench.runner.pipeline
    import linbench.runner.worker  # noqa: F401


def serve(requests: TextIO, answers: TextIO) -> None:
    """Answer each request line of ``requests`` with the round's pid, then its exit status."""
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_round(list(request["argv"]), str(request["log"]))  # never returns
        _answer(answers, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _answer(answers, {"exit": os.waitstatus_to_exitcode(status)})


def run_round(argv: list[str], log: str) -> None:
    """In the forked child: a session of its own, stdout and stderr into ``log``, stdin empty,
    then ``linbench ARGV``; the child ends with its exit status, never back in the server."""
    code = 1
    try:
        os.setsid()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        sys.argv = ["linbench", *argv]
        from linbench.cli import main

        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException as exc:  # a round that breaks says so in its log, never in the server
        print(f"linbench: error: the round stopped: {exc!r}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _answer(answers: TextIO, message: dict[str, Any]) -> None:
    answers.write(json.dumps(message) + "\n")
    answers.flush()


if __name__ == "__main__":
    warm()
    serve(sys.stdin, sys.stdout)
