"""The worker process: runs tasks and sends each ProcessResult back over a pipe.

Imported by the fork server before any task (so torch is imported once, not per point). A
worker runs one task, a batch handed to it at once (``main``), or the tasks it is sent one at
a time until told to stop (``serve``: a warm worker that measures one curve's points, so the
fork, imports and thread pools are paid once per curve). A crash takes down only its worker.
What ran before in a worker does not reach a point's memory figure: a measurement starts by
dropping the correctness checks' fp64 references and handing freed heap back to the system
(execute.py), so the measured call's new pages show in its RSS window as in a fresh fork.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import traceback
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path

import torch  # imported here so the fork server holds it for every worker

from linbench.machine.limits import cap_address_space, die_with_parent
from linbench.oom import is_out_of_memory
from linbench.results.processes import ProcessResult
from linbench.runner.kind_protocol import Task
from linbench.variants.feature_forms import autotune_pin
from linbench.variants.plugins import load_plugin_file
from linbench.variants.registry import load_builtin_variants

# The fork server imports this module once per run: the built-in variants' modules (about 70)
# are imported here too, not again in every worker it forks.
load_builtin_variants()

# torch's own thread count, read when a worker starts: a task that names none runs with it.
_default_threads: list[int] = []
# The curves (Point.series) this worker has measured a point of, or passed the correctness
# check of (the impl ran here, at the check's length, in the point's mode and dtype): a later
# point of one of them meets warm pools, caches and clock, and needs no warm-up time beyond
# its first call.
_measured_curves: set[tuple[object, ...]] = set()


def main(tasks: Task | list[Task], conn: Connection, log_path: str) -> None:
    """Entry point of a worker fork: one task, or several measured one after the other in
    this same process, each result sent the moment it exists."""
    _start()
    for task in tasks if isinstance(tasks, list) else [tasks]:
        conn.send(_one(task, log_path))
        _release_cached_memory(task)
    conn.close()


def serve(conn: Connection, log_path: str) -> None:
    """Entry point of a warm worker: the tasks ``conn`` sends, one at a time, each result
    sent back the moment it exists, until it sends None or closes."""
    _start()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            break
        if task is None:
            break
        conn.send(_one(task, log_path))
        _release_cached_memory(task)
    conn.close()


def _start() -> None:
    # A terminal's Ctrl-C reaches the whole process group; the supervisor decides what
    # it means and kills this fork, which must not record "KeyboardInterrupt" as an error.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    # What the imports made lives as long as the worker: out of the collector's sight, the
    # collection before each measured point (execute.py) takes milliseconds, not the 0.25 s a
    # full pass over torch's objects took.
    gc.freeze()


def _one(task: Task, log_path: str) -> ProcessResult:
    """The result of ``task``, whatever happens in it."""
    _redirect_output(Path(log_path), task)
    try:
        result = _run(task)
    except BaseException as exc:  # every failure of the task becomes its result, never a hang
        result = _failure(exc)
    if task.job == "measure":
        result = replace(result, pid=os.getpid())  # processes.csv names the process that measured
    sys.stdout.flush()
    sys.stderr.flush()
    return result


def _release_cached_memory(task: Task) -> None:
    """Hand the caching allocator's blocks back, so the next point's reserved and NVML
    readings start from what a fresh process would hold."""
    if task.point.device.startswith("cuda") and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _run(task: Task) -> ProcessResult:
    from linbench.runner.execute import run_gate, run_measure
    from linbench.runner.triton_tuning import run_warm

    if autotune_pin.pinned():  # `check`'s one-config autotuner: its choices are never timed
        raise RuntimeError(autotune_pin.TIMING_REFUSAL)
    # CUDA maps far more address space than it uses, so the cap is for CPU points only.
    if task.memory_limit_bytes is not None and task.point.device == "cpu":
        cap_address_space(task.memory_limit_bytes)
    # A warm worker keeps the count an earlier task set: each task sets its own.
    if not _default_threads:
        _default_threads.append(torch.get_num_threads())
    torch.set_num_threads(task.threads or _default_threads[0])
    for plugin in task.plugins:
        load_plugin_file(plugin)
    if task.job == "warm":
        return run_warm(task)
    if task.job == "gate":
        checked = run_gate(task)
        if checked.status == "ok":
            _measured_curves.add(task.point.series)
        return checked
    result = run_measure(task, warm_curve=task.point.series in _measured_curves)
    if result.status == "ok":
        _measured_curves.add(task.point.series)
    return result


def _failure(exc: BaseException) -> ProcessResult:
    traceback.print_exc()  # into the worker log, for whoever debugs the impl
    message = " ".join(f"{type(exc).__name__}: {exc}".split())
    return ProcessResult("oom" if is_out_of_memory(exc) else "error", error=message[:500])


def _redirect_output(log_path: Path, task: Task) -> None:
    """Send the fork's stdout and stderr (Python's and C's) to the run's worker log,
    so warnings never garble the progress display and a crash leaves its last words."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    print(f"== {task.job} {task.point.label} (pid {os.getpid()})", flush=True)
