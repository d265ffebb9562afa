"""An agent started by a launcher's task (a Slurm array task, a Ray actor), watched by that
task as the local coordinator watches its agents (linbench/fleet/local.py).

The task runs ``python -m linbench.fleet.agent part ...`` as a child and reads its events
(JSON lines on the agent's standard output). When the agent dies in the middle of a point (a
crash, the OOM killer, ``kill -9``), the task, still holding its GPU, becomes the writer of
that attempt folder: the point gets a ``crashed`` row, and a new agent on the same GPU runs
what the shard has left (progress.py continues the chain on the same card). An agent that
dies between points, refuses to start, or is stopped (SIGTERM, SIGINT, SIGHUP: a task
cancelled or at its time limit) is not restarted: its status is the task's.

What a watcher cannot see is its own end: a task cancelled, timed out or lost with its node
takes its agent with it, leaves the point in flight without a row, and fails; the launcher
reports it and ``--resume`` runs what is missing, that point included.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from linbench.fleet.crashed import died, write_crashed
from linbench.results.record import Key
from linbench.results.schema import WHERE_COLUMNS
from linbench.results.store import RunStore, RunStoreError

MAX_RESTARTS = 1  # as the local executor: a GPU whose agents die more often is left to --resume
# Signals that ask a process to stop: Slurm's on cancelling a task, or at its time limit, a
# Ctrl-C. The point was cut off, not crashed: it stays missing, and the agent is not restarted.
STOPPED_BY = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass(frozen=True)
class InFlight:
    """The point an agent was measuring when its events stopped, and where it was writing."""

    folder: Path
    key: Key


@dataclass
class Watched:
    """The last agent's exit status, and the points recorded as crashed on the way."""

    status: int = 0
    crashed: list[Key] = field(default_factory=list)


def run_watched(
    command: Sequence[str],
    env: Mapping[str, str],
    preexec_fn: Callable[[], None] | None = None,
    max_restarts: int = MAX_RESTARTS,
) -> Watched:
    """Run the agent ``command``; after a death mid-point, record it and start it again."""
    watched = Watched()
    for _ in range(max_restarts + 1):
        agent = subprocess.Popen(list(command), env=dict(env), stdout=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
        assert agent.stdout is not None  # started with stdout=PIPE
        in_flight = follow(agent.stdout)
        watched.status = agent.wait()
        if watched.status == 0 or in_flight is None or -watched.status in STOPPED_BY:
            return watched
        why = f"the agent (pid {agent.pid}) died ({died(watched.status)}) while this point ran"
        if not write_crashed_row(in_flight, why, agent.pid):
            return watched  # nothing recorded: what is left is for --resume
        watched.crashed.append(in_flight.key)
    return watched


def follow(events: Iterable[str]) -> InFlight | None:
    """Read an agent's events to their end: the point in flight then, if any."""
    folder: Path | None = None
    key: Key | None = None
    for line in events:
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the agent's events are JSON lines; nothing else is written there
        name = event.get("event")
        if name == "attempt":
            folder, key = Path(event["path"]), None
        elif name == "start":
            key = tuple(str(v) for v in event["key"])
        elif name in ("row", "done"):
            key = None
    return InFlight(folder, key) if folder is not None and key is not None else None


def write_crashed_row(in_flight: InFlight, why: str, pid: int) -> bool:
    """A ``crashed`` row for the point in flight, in its attempt's folder, with the attempt's
    ``where`` columns (its meta.json's fleet section); False where the agent died before its
    folder held a run (the point then stays missing, for ``--resume``) or wrote the row."""
    try:
        store = RunStore.open(in_flight.folder)  # repairs a line the dead agent left half-written
        meta = store.read_meta()
    except RunStoreError:
        return False
    if in_flight.key in store.done_keys():
        return False
    fleet = dict(meta.get("fleet") or {})
    where = {name: fleet[name] for name in WHERE_COLUMNS if name in fleet} | {"agent_pid": pid}
    write_crashed(store, [in_flight.key], where, why, str(fleet.get("gpu_name") or ""))
    return True


def agent_part_command(python: str, run_dir: str, ids: str, args: Sequence[str]) -> list[str]:
    """An agent running the named shards of the plan in ``run_dir`` on the GPU it was given."""
    return [python, "-m", "linbench.fleet.agent", "part", "--run-dir", run_dir, "--shards", ids, *args]


__all__ = ["MAX_RESTARTS", "InFlight", "Watched", "agent_part_command", "follow", "run_watched", "write_crashed_row"]
