"""Runs each task in a worker fork and turns every way it can end into a result.

Workers come from multiprocessing's fork server, which imports torch once (see
worker.py): a fork costs milliseconds where a fresh interpreter would cost seconds of
imports. A task runs in a fresh fork, in a batch handed to one fork, or in a warm worker
named by a key: the tasks given the same key run one after the other in one worker kept
between them (the points of one curve: its variant's imports, kernel library and thread
pools start once); tasks that measure nothing may run in several warm workers side by side.
At most ``MAX_WARM`` warm workers are kept; a worker whose task failed is not kept. A worker
that sends no result crashed (its exit signal and the last line it logged are reported); one
that runs past the time limit is killed and reported as a timeout.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linbench.results.processes import ProcessResult
from linbench.runner.kind_protocol import Task
from linbench.runner.zygote import can_fork_server, fork_server

WORKER_MODULE = "linbench.runner.worker"
# Seconds a worker gets on top of its point's limit to start and to send its result.
START_GRACE_S = 5.0
# Warm workers kept at once (idle ones wait on their pipe and use no CPU); past it the one
# used longest ago is stopped.
MAX_WARM = 16


def start_worker_server(fork: bool = False) -> None:
    """Start the fork server now instead of at the first worker; a server already running is
    kept.

    ``fork``: this process holds the worker module's imports and is the command's own, and
    the server is a fork of it (zygote.py), which imports nothing, where it can be forked.
    Else the server is a process of its own that imports torch and the worker module, seconds
    of work: started before the caller imports torch itself, the two imports run side by side
    on a machine with an idle core. ``Supervisor.ready`` waits for it before anything is
    measured."""
    _worker_context()
    if fork and fork_server(WORKER_MODULE):
        return
    with _main_module_hidden():
        multiprocessing.forkserver.ensure_running()


def server_can_fork_from_here() -> bool:
    """Whether ``start_worker_server(fork=True)`` can fork the server from this Python once
    this process holds the worker module's imports (a caller about to import them then waits
    to start it)."""
    return can_fork_server()


def _worker_context() -> Any:
    """multiprocessing's fork-server context, its server set to import the worker module."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([WORKER_MODULE])
    return context


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Start workers as if from an interactive session.

    multiprocessing makes each fork-server child re-import the parent's ``__main__`` (the
    ``linbench`` script, pytest, a user's script), which costs time per point and runs a
    script without a ``__main__`` guard again. The worker needs nothing from it, so the
    parent shows multiprocessing a bare ``__main__`` while the child is launched.
    """
    real = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = real


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C back until the worker has been handed its task.

    An interrupt while ``start`` is still sending the task leaves the fork-server child
    reading a cut-off pickle, and it prints a traceback onto the user's terminal. The
    signal is recorded instead and raised again once the hand-over is complete.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers, and only it receives SIGINT
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            signal.raise_signal(signal.SIGINT)


@dataclass
class _Warm:
    """A warm worker and our end of its two-way pipe."""

    process: Any
    conn: Any


@dataclass
class _Flight:
    """A task in flight in a warm worker, in one lane of ``Supervisor.run_side_by_side``."""

    lane: int
    item: int
    key: Hashable
    warm: _Warm
    deadline: float  # time.monotonic() past which it is killed
    log_offset: int
    limit_s: float  # its time limit, for the timeout's message


class Supervisor:
    """Hands tasks to worker forks, one at a time, and never raises because of one."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._ctx = _worker_context()
        self._current: Any = None
        self._warm: dict[Hashable, _Warm] = {}  # least recently used first

    def ready(self) -> None:
        """Return once the fork server forks workers (its imports done), starting it if need
        be: a fork of a no-op. The machine's idle cores are measured after it, not while
        the server's imports still take a core."""
        process = self._ctx.Process(target=os.getpid, daemon=True)
        with _sigint_deferred(), _main_module_hidden():
            process.start()
        process.join()

    def run(self, task: Task, timeout_s: float, worker: Hashable | None = None) -> ProcessResult:
        """The worker's result for ``task``, or a crashed/timeout result in its place: in a
        fresh fork, or with ``worker`` in the warm worker of that key (started when there is
        none)."""
        if worker is not None:
            return self._run_warm(task, timeout_s, worker)
        result, _ = self.run_batch([task], timeout_s)[0]
        assert result is not None  # the one task is the one in flight: it always has a result
        return result

    def _run_warm(self, task: Task, timeout_s: float, key: Hashable) -> ProcessResult:
        warm = self._warm.pop(key, None)
        if warm is None or not warm.process.is_alive():
            warm = self._start_warm()
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._current = warm.process
        try:
            with _sigint_deferred():
                warm.conn.send(task)
            result = self._next_result(warm.conn, warm.process, timeout_s, offset)
        except (BrokenPipeError, ConnectionResetError):  # it died between tasks
            result = ProcessResult("crashed", error=self._crash_reason(warm.process.exitcode, offset))
        finally:
            self._current = None
        if result.status == "ok" and warm.process.is_alive():
            self._warm[key] = warm
            self._trim_warm()
        else:  # a failed point may leave its worker in any state: the next one starts afresh
            self._retire(warm)
        return result

    def run_side_by_side(
        self, lanes: Sequence[Sequence[tuple[Hashable, Task]]], timeout_s: float | Callable[[Task], float]
    ) -> list[list[ProcessResult | None]]:
        """The lanes side by side, each lane's tasks one after the other, each in the warm
        worker of its key within ``timeout_s`` (one limit, or each task's), as ``run`` with
        ``worker`` runs them: for tasks that measure
        nothing (the correctness checks), whose threads the caller has shared out. The
        results by lane; None for the tasks of a lane after one that failed (its worker is
        not kept: it crashed, ran out of time or its task did not end ok), which the caller
        runs again alone. A crash's last logged line may be a neighbour lane's."""
        results: list[list[ProcessResult | None]] = [[None] * len(lane) for lane in lanes]
        flights: dict[Any, _Flight] = {}  # by our end of the worker's pipe
        for lane in range(len(lanes)):
            self._launch(flights, results, lanes, lane, 0, timeout_s)
        while flights:
            soonest = min(flight.deadline for flight in flights.values())
            for conn in multiprocessing.connection.wait(list(flights), max(soonest - time.monotonic(), 0.0)):
                flight = flights.pop(conn)
                result = self._landed(flight)
                results[flight.lane][flight.item] = result
                if self._kept_warm(flight, result):
                    self._launch(flights, results, lanes, flight.lane, flight.item + 1, timeout_s)
            for conn, flight in list(flights.items()):
                if time.monotonic() > flight.deadline:
                    del flights[conn]
                    error = f"no result within {flight.limit_s:g} s (its time limit); worker killed"
                    results[flight.lane][flight.item] = ProcessResult("timeout", error=error)
                    self._kept_warm(flight, None)
        self._trim_warm()
        return results

    def _launch(
        self,
        flights: dict[Any, _Flight],
        results: list[list[ProcessResult | None]],
        lanes: Sequence[Sequence[tuple[Hashable, Task]]],
        lane: int,
        item: int,
        timeout_s: float | Callable[[Task], float],
    ) -> None:
        """Hand the lane's task ``item`` (if there is one) to its key's warm worker."""
        if item >= len(lanes[lane]):
            return
        key, task = lanes[lane][item]
        warm = self._warm.pop(key, None)
        if warm is None or not warm.process.is_alive():
            warm = self._start_warm()
        self._warm[key] = warm  # the most recently used, and where stop() reaches it
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        limit = timeout_s(task) if callable(timeout_s) else timeout_s
        flight = _Flight(lane, item, key, warm, time.monotonic() + limit + START_GRACE_S, offset, limit)
        try:
            with _sigint_deferred():
                warm.conn.send(task)
        except (BrokenPipeError, ConnectionResetError):  # it died between tasks
            results[lane][item] = ProcessResult("crashed", error=self._crash_reason(warm.process.exitcode, offset))
            self._kept_warm(flight, None)
            return
        flights[warm.conn] = flight

    def _landed(self, flight: _Flight) -> ProcessResult:
        try:
            result: ProcessResult = flight.warm.conn.recv()
        except (EOFError, OSError):
            flight.warm.process.join(START_GRACE_S)
            return ProcessResult("crashed", error=self._crash_reason(flight.warm.process.exitcode, flight.log_offset))
        return result

    def _kept_warm(self, flight: _Flight, result: ProcessResult | None) -> bool:
        """Whether the flight's worker stays warm for its lane's next task: not after a failure."""
        if result is not None and result.status == "ok" and flight.warm.process.is_alive():
            return True
        if self._warm.get(flight.key) is flight.warm:
            del self._warm[flight.key]
        if flight.warm.process.is_alive():
            flight.warm.process.kill()
        self._retire(flight.warm)
        return False

    def _trim_warm(self) -> None:
        """Stop the warm workers used longest ago past MAX_WARM."""
        while len(self._warm) > MAX_WARM:
            self._retire(self._warm.pop(next(iter(self._warm))))

    def _start_warm(self) -> _Warm:
        from linbench.runner import worker

        ours, theirs = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(target=worker.serve, args=(theirs, str(self.log_path)), daemon=True)
        with _sigint_deferred(), _main_module_hidden():
            process.start()
        theirs.close()  # only the worker holds its end: a crash then closes the pipe
        return _Warm(process, ours)

    def retire_warm(self) -> None:
        """Stop every warm worker (the next task of any key starts a fresh one)."""
        while self._warm:
            self._retire(self._warm.pop(next(iter(self._warm))))

    def _retire(self, warm: _Warm) -> None:
        try:
            if warm.process.is_alive():
                warm.conn.send(None)
                warm.process.join(START_GRACE_S)
        except OSError:
            pass
        finally:
            if warm.process.is_alive():
                warm.process.kill()
                warm.process.join()
            warm.conn.close()

    def run_batch(
        self, tasks: list[Task], timeout_s: float | Callable[[Task], float]
    ) -> list[tuple[ProcessResult | None, float]]:
        """The results of ``tasks`` run one after the other in one worker, each within
        ``timeout_s`` (one limit, or each task's), with the seconds each took from the one
        before (the first from the fork). The task in flight when the worker dies or runs out
        of time gets a crashed or timeout result; the tasks after it get None (not run: run
        them again)."""
        from linbench.runner import worker

        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        receiver, sender = self._ctx.Pipe(duplex=False)
        handed: Task | list[Task] = tasks[0] if len(tasks) == 1 else list(tasks)
        process = self._ctx.Process(target=worker.main, args=(handed, sender, str(self.log_path)), daemon=True)
        with _sigint_deferred(), _main_module_hidden():
            process.start()
            self._current = process
        sender.close()  # only the worker writes; our copy would keep the pipe open past a crash
        results: list[tuple[ProcessResult | None, float]] = [(None, 0.0)] * len(tasks)
        last = time.perf_counter()
        try:
            for index in range(len(tasks)):
                limit = timeout_s(tasks[index]) if callable(timeout_s) else timeout_s
                result = self._next_result(receiver, process, limit, offset)
                now = time.perf_counter()
                results[index], last = (result, now - last), now
                if result.status in ("timeout", "crashed") and not process.is_alive():
                    return results
            process.join(START_GRACE_S)
            return results
        finally:
            if process.is_alive():
                process.kill()
                process.join()
            receiver.close()
            self._current = None

    def _next_result(self, receiver: Any, process: Any, timeout_s: float, log_offset: int) -> ProcessResult:
        """The worker's next result, or a timeout or crashed result once it is killed or dead."""
        if not receiver.poll(timeout_s + START_GRACE_S):
            process.kill()
            process.join()
            return ProcessResult("timeout", error=f"no result within {timeout_s:g} s (its time limit); worker killed")
        try:
            result: ProcessResult = receiver.recv()
        except (EOFError, OSError):
            process.join(START_GRACE_S)
            return ProcessResult("crashed", error=self._crash_reason(process.exitcode, log_offset))
        return result

    def stop(self) -> None:
        """Kill the worker in flight (on Ctrl-C) and stop the warm ones."""
        if self._current is not None and self._current.is_alive():
            self._current.kill()
            self._current.join()
        for warm in self._warm.values():
            if warm.process.is_alive():
                warm.process.kill()
        self.retire_warm()

    def _crash_reason(self, exitcode: int | None, log_offset: int) -> str:
        if exitcode is not None and exitcode < 0:
            how = f"worker killed by {signal.Signals(-exitcode).name}"
            if -exitcode == signal.SIGKILL:
                how += " (the system's OOM killer?)"
        else:
            how = f"worker exited with status {exitcode} without a result"
        last = self._last_log_line(log_offset)
        return f"{how}; last output: {last}" if last else how

    def _last_log_line(self, offset: int) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                lines = [line.strip() for line in log.read().decode(errors="replace").splitlines()]
        except OSError:
            return ""
        lines = [line for line in lines if line and not line.startswith("== ")]
        return lines[-1][:300] if lines else ""
