"""Rounds of an A/B: ``linbench run`` in the baseline's tree and in the current one, alternated.

Each side runs as its own ``linbench run`` with its tree as working folder and first on
PYTHONPATH, so the baseline measures with its own code (and builds its kernel library from its
own sources): forked from the side's round server (linbench/cli/round_server.py, which imported
torch and linbench once) where its tree has one, else as a new ``python -m linbench`` process.
Rounds go in ABBA order, baseline first in odd rounds and current first in even ones, so a
drift of the machine over the job (warming up, a neighbour starting) falls on both sides alike
instead of on whichever side always runs second. Each round measures every point in fresh
processes (one each, or several in a late round of a few points); the merge (merge.py) makes
each round a process of its points. After the rounds asked for, more follow while the caller
says a point needs them (job.py asks the repeated-process protocol, as the runner does for a
run's processes), up to a most. Such a round measures only the points that need it (``linbench
run --only-points``) where the baseline revision can be told so (the current one is this code):
on a busy CPU one spread point would otherwise keep every point going, and a round of one
point costs a fraction of a round of all of them. With a deadline (``--max-job-s``:
ab/deadline.py), a round still running at it is stopped, and so is a ``--help`` probe of a side;
a probe that does not answer within PROBE_S is a RoundError, as a side that cannot run is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linbench.ab.deadline import Deadline, DeadlineError
from linbench.ab.round_server import STOP_GRACE_S, RoundOverdueError, RoundServer, RoundServerError, stop_process_group
from linbench.results.point_list import write_point_list
from linbench.results.record import Key, row_key
from linbench.results.store import RunStore, RunStoreError

SIDES = ("baseline", "current")
# `linbench run` exits 1 when a point failed (mismatch, error, crashed): the round measured,
# and the failure goes into the merge. Exit 2 is a refusal (an unknown flag, a bad suite).
MEASURED_EXITS = (0, 1)
USAGE_EXIT = 2
ERROR_PREFIX = "linbench: error: "
# What stops an A/B as Ctrl-C does: a CI cancellation sends SIGTERM, a closed terminal SIGHUP.
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
# A side's `linbench run --help` imports torch: seconds, tens on a loaded 2-core machine. One
# that has not answered in this long hangs, and the A/B cannot run that side.
PROBE_S = 120.0


class RoundError(RuntimeError):
    """A round that did not measure; the message is one line naming the side and round."""


@dataclass(frozen=True)
class Side:
    """One side of the A/B: its name, the tree its code runs from, the command its rounds run
    (``run``, or ``decode`` for a decode suite), and the flags as its code spells them where that
    differs (``words``: a revision from before a rename)."""

    name: str
    tree: Path
    command: str = "run"
    words: Callable[[Sequence[str]], list[str]] | None = None


@dataclass(frozen=True)
class RoundResult:
    """One side's run in one round."""

    side: str
    round: int  # 1-based
    folder: Path
    seconds: float
    statuses: dict[str, int]

    def summary(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.statuses.items()))
        return f"{self.side} {counts or 'no points'} in {self.seconds:.0f} s"


def round_order(round_index: int) -> tuple[str, str]:
    """The sides of round ``round_index`` (1-based) in the order they run: ABBA."""
    return SIDES if round_index % 2 else SIDES[::-1]


def rounds_dir(out_dir: Path, side: str) -> Path:
    """Where ``side``'s round run folders go."""
    return out_dir / side / "rounds"


Folders = dict[str, list[Path]]
ONLY_POINTS = "--only-points"
PROCESS_FLAGS = ("--processes", "--max-processes")


def run_rounds(
    sides: dict[str, Side],
    rounds: int,
    run_args: Sequence[str],
    out_dir: Path,
    on_round: Callable[[int, list[RoundResult]], None] = lambda index, results: None,
    most: int | None = None,
    another: Callable[[Folders], Collection[Key]] = lambda folders: (),
    narrow: bool = False,
    later: Sequence[str] = (),
    only: Collection[Key] | None = None,
    affordable: Callable[[], bool] = lambda: True,
    processes: Callable[[], int] = lambda: 1,
    deferred: Callable[[], Collection[Key]] = lambda: (),
    deadline: Deadline | None = None,
) -> Folders:
    """Run ``rounds`` rounds, then more, up to ``most`` (default: ``rounds``), while
    ``another`` names points (record.row_key's) that the round folders so far leave needing
    one; each side's round run folders, in round order. With ``narrow``, those rounds measure
    only the points named. ``later``: words every round after the first adds (``--no-check``:
    round 1 checked every point). ``only`` (with ``narrow``): the points the rounds asked for
    measure (None: all). ``affordable`` is asked before each of those rounds after the first:
    False (another would pass the job's budget) stops the rounds there. ``processes``, asked
    after ``another``, says how many processes a point such a narrowed round measures (more
    than one only where the caller knows both sides take ``--processes``). ``deferred``, asked
    before each of the rounds asked for after the first (with ``narrow``), names points those
    rounds leave out (too dear for them: sequential.py's outsized), which the later rounds
    measure as ``another`` names them. ``on_round`` hears each finished round. RoundError
    stops at the first round that did not measure; DeadlineError at a round ``deadline``
    stopped, with each side's complete rounds before it (the stopped one's are left out)."""
    with round_servers(sides, deadline) as servers:
        folders: Folders = {name: [] for name in sides}
        first: tuple[set[Key], set[Key]] = (set(), set())  # round 1's points, and its failures
        index = 0
        while (index < rounds and (index == 0 or affordable())) or (
            rounds <= index < (most or rounds) and (needed := another(folders))
        ):
            index += 1
            args = list(run_args) + (list(later) if index > 1 else [])
            if index > rounds and narrow:
                args += [ONLY_POINTS, str(write_point_list(out_dir / f"round-{index}-points.csv", needed))]
                args = with_processes(args, processes())
            elif index > 1 and narrow and (skipped := first[1] | set(deferred())):
                # A point that failed on either side in round 1 keeps that failure whatever later
                # rounds measure (merge.py): measuring it again (a compile that times out, twice a
                # round) only spends the job's budget. A deferred one waits for the later rounds.
                left = set(only if only is not None else first[0]) - skipped
                if not left:
                    break
                args += [ONLY_POINTS, str(write_point_list(out_dir / f"round-{index}-points.csv", left))]
            elif only is not None and narrow:
                out_dir.mkdir(parents=True, exist_ok=True)
                args += [ONLY_POINTS, str(write_point_list(out_dir / "points.csv", only))]
            try:
                results = [
                    run_one(sides[name], index, args, out_dir, servers.get(name), deadline)
                    for name in round_order(index)
                ]
            except DeadlineError as stop:
                raise stop.with_rounds(folders) from None
            for result in results:
                folders[result.side].append(result.folder)
            if index == 1:
                first = round_one(folders)
            on_round(index, results)
        return folders


def with_processes(args: Sequence[str], count: int) -> list[str]:
    """``args`` measuring each point in ``count`` processes (``--processes`` and
    ``--max-processes`` both ``count``, in place of any given); unchanged for one."""
    if count <= 1:
        return list(args)
    kept: list[str] = []
    skip = False
    for word in args:
        if skip:
            skip = False
        elif word in PROCESS_FLAGS:
            skip = True
        else:
            kept.append(word)
    return [*kept, *(w for flag in PROCESS_FLAGS for w in (flag, str(count)))]


def round_one(folders: Folders) -> tuple[set[Key], set[Key]]:
    """The points either side's first round measured, and those it measured as anything but ok
    on either side."""
    rows = [row for paths in folders.values() for row in RunStore(paths[0]).rows()]
    return {row_key(row) for row in rows}, {row_key(row) for row in rows if row["status"] != "ok"}


def run_one(
    side: Side,
    index: int,
    run_args: Sequence[str],
    out_dir: Path,
    server: RoundServer | None = None,
    deadline: Deadline | None = None,
) -> RoundResult:
    """``linbench run RUN_ARGS --quiet --yes --out <side>/rounds`` in ``side``'s tree (forked by
    its round ``server`` where it has one, else a new process); its output goes to
    ``round-<index>.log`` beside the run folders. DeadlineError when ``deadline`` has passed
    before it starts or stops it."""
    what = f"the {side.name} side's round {index}"
    if deadline is not None and deadline.passed():
        raise DeadlineError(f"{what} before it started", index)
    until, grace = (None, STOP_GRACE_S) if deadline is None else (deadline.at, deadline.grace_s)
    where = rounds_dir(out_dir, side.name)
    where.mkdir(parents=True, exist_ok=True)
    before = set(where.iterdir())
    log = where / f"round-{index}.log"
    args = side.words(run_args) if side.words is not None else list(run_args)
    words = [side.command, *args, "--quiet", "--yes", "--out", str(where)]
    started = time.perf_counter()
    try:
        if server is not None:
            code = server.run(words, log, until, grace)
        else:
            with log.open("w") as handle:
                argv = [sys.executable, "-m", "linbench", *words]
                code = run_in_own_group(argv, side.tree, side_env(side.tree), handle, until, grace)
    except RoundServerError as gone:
        raise RoundError(f"{what} did not run: {gone} (its log: {log})") from None
    except RoundOverdueError:
        raise DeadlineError(f"{what} (its log: {log})", index) from None
    seconds = time.perf_counter() - started
    made = sorted(p for p in where.iterdir() if p not in before and p.is_dir())
    folder = _measured_folder(side, index, code, made, log)
    statuses = Counter(row["status"] for row in RunStore(folder).rows())
    return RoundResult(side.name, index, folder, seconds, dict(statuses))


@contextmanager
def round_servers(sides: dict[str, Side], deadline: Deadline | None = None) -> Iterator[dict[str, RoundServer]]:
    """A round server for each side whose tree has one, ended when the rounds end (killed
    ``deadline``'s grace after, where there is one)."""
    servers = {
        name: RoundServer(side.tree, side_env(side.tree))
        for name, side in sides.items()
        if RoundServer.serves(side.tree)
    }
    try:
        yield servers
    finally:
        for server in servers.values():
            server.close(STOP_GRACE_S if deadline is None else deadline.grace_s)


def run_in_own_group(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    log: Any,
    until: float | None = None,
    grace_s: float = STOP_GRACE_S,
) -> int:
    """Run ``argv`` in a process group of its own, its output to ``log``; its exit status. When
    this process is interrupted meanwhile (Ctrl-C, or SIGTERM and SIGHUP under
    ``stopping_on_signals``), the round is stopped as a Ctrl-C stops ``linbench run`` (its
    workers ended, its folder marked), and after STOP_GRACE_S whatever is left of its group (a
    fork server, a worker) is killed, before the interrupt goes on. Still running at ``until``
    (time.monotonic(); None: no end), it is stopped so, killed ``grace_s`` after its Ctrl-C,
    and RoundOverdueError says so."""
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return child.wait(timeout=None if until is None else max(until - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        stop_group(child, grace_s)
        raise RoundOverdueError("still running at its deadline") from None
    except BaseException:
        stop_group(child)
        raise


def stop_group(child: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> None:
    """Ctrl-C to ``child``'s process group, up to ``grace_s`` for it to end, then SIGKILL to
    whatever the group still holds (the child's own children included, however it ended)."""
    stop_process_group(child.pid, lambda: child.poll() is not None, grace_s)
    with suppress(subprocess.TimeoutExpired):
        child.wait(timeout=grace_s)


@contextmanager
def stopping_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the block, as Ctrl-C does, so an A/B
    cancelled by CI removes its worktree and stops its rounds (run_in_own_group) instead of
    dying with them running. Only the main thread may set handlers: elsewhere, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    previous = {signum: signal.signal(signum, interrupt) for signum in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def can_narrow(side: Side) -> bool:
    """Whether ``side``'s ``linbench run`` takes ``--only-points`` (a revision from before it
    does not): its help, asked once, names the flag."""
    return ONLY_POINTS in run_help(side)


def run_help(side: Side, deadline: Deadline | None = None) -> str:
    """``side``'s ``linbench <command> --help``, wide and plain ("" where it fails); RoundError
    when it does not answer (help_of)."""
    found = help_of(side.name, side.tree, side_env(side.tree), side.command, deadline)
    return found.stdout if found.returncode == 0 else ""


def help_of(
    name: str, tree: Path, env: dict[str, str], command: str, deadline: Deadline | None = None
) -> subprocess.CompletedProcess[str]:
    """``linbench <command> --help`` run in the side ``name``'s ``tree``, wide and plain:
    RoundError (one line) when it has not answered within PROBE_S, DeadlineError where
    ``deadline`` came first; either way it is killed with its process group."""
    argv = [sys.executable, "-m", "linbench", command, "--help"]
    limit = PROBE_S if deadline is None else min(PROBE_S, deadline.left())
    found = bounded(argv, tree, env | {"COLUMNS": "200", "NO_COLOR": "1"}, limit)
    if found is not None:
        return found
    what = f"the {name} side's `linbench {command} --help`"
    if limit < PROBE_S:
        raise DeadlineError(f"{what}, before round 1", 1)
    raise RoundError(f"{what} did not answer within {PROBE_S:g} s: its checkout ({tree}) cannot run here")


def bounded(
    argv: Sequence[str], cwd: Path, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str] | None:
    """``argv`` run in a process group of its own, its output captured; None when it ran past
    ``timeout_s`` (its group then killed; so too when this process is interrupted meanwhile,
    before the interrupt goes on)."""
    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        return None
    except BaseException:
        _kill_group(child)
        raise
    return subprocess.CompletedProcess(list(argv), child.returncode, out, err)


def _kill_group(child: subprocess.Popen[str]) -> None:
    """SIGKILL to ``child``'s process group, then its pipes drained and it reaped."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.communicate()


def side_env(tree: Path) -> dict[str, str]:
    """This process's environment with ``tree`` first on PYTHONPATH, so ``import linbench``
    finds that tree's package before any other (an editable install included)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    return env


def _measured_folder(side: Side, index: int, code: int, made: list[Path], log: Path) -> Path:
    """The run folder the round made; RoundError when the round refused, crashed or made none."""
    where = f"the {side.name} side's round {index}"
    if code == USAGE_EXIT:
        raise RoundError(f"{where} refused the run: {_error_line(log)} (its log: {log})")
    if code not in MEASURED_EXITS or len(made) != 1:
        raise RoundError(f"{where} failed (exit {code}): {_last_line(log)} (its log: {log})")
    store = RunStore(made[0])
    try:
        status = store.read_meta().get("status") if store.results_path.is_file() else None
    except RunStoreError as exc:
        raise RoundError(f"{where} left no readable run: {exc} (its log: {log})") from None
    if status != "complete":
        raise RoundError(f"{where} did not finish its run (status {status!r}; its log: {log})")
    return store.path


def _error_line(log: Path) -> str:
    """The child's ``linbench: error:`` message, without the prefix (else its last line)."""
    lines = _lines(log)
    errors = [line.removeprefix(ERROR_PREFIX) for line in lines if line.startswith(ERROR_PREFIX)]
    return errors[-1] if errors else _last_line(log)


def _last_line(log: Path) -> str:
    lines = _lines(log)
    return lines[-1] if lines else "no output"


def _lines(log: Path) -> list[str]:
    try:
        return [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return []
