"""The built-in executor: one agent per GPU of this host, fed from one queue of shards.

Standard library only. The coordinator (this process) starts the agents, hands each idle
one the next shard (longest first), and reads their events on one thread. It writes nothing
while an agent lives: each attempt folder has that agent as its only writer.

When an agent dies (a crash, the OOM killer, ``kill -9``), the coordinator becomes the
writer of its attempt folder: the point it was measuring gets a ``crashed`` row, and the
rest of its shard goes back to the front of the queue for a new agent on the same card. A
card whose agents keep dying (more than ``max_restarts`` times) is given up; its shard then
starts over on another card of the same model, or, with none left, its remaining points are
recorded as crashed. So every point ends with exactly one row, and no scenario spans two
cards. A killed coordinator takes its agents with it; ``run_local`` on the same folder
resumes (linbench/fleet/progress.py says what is left).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from linbench.fleet.crashed import died, write_crashed
from linbench.fleet.errors import FleetError
from linbench.fleet.folders import claim_attempt, read_plan
from linbench.fleet.launch import AgentSpec, agent_command, agent_env
from linbench.fleet.placement import Placement
from linbench.fleet.progress import chain_rows, chosen_chain, pending, read_attempts
from linbench.fleet.shards import Shard, longest_first
from linbench.results.record import Key
from linbench.results.store import RunStore

# What the coordinator hears of its agents, as it hears it: (the agent's GPU, the event).
Heard = Callable[[str, dict[str, Any]], None]

AGENTS_DIR = "agents"


@dataclass
class Work:
    """Points of one shard waiting for an agent: on one card (``uuid``), on any card of one
    model (``model``), or on any card (neither)."""

    shard: Shard
    keys: tuple[Key, ...]
    uuid: str | None = None
    model: str | None = None


@dataclass
class Slot:
    """One GPU's agent, as the coordinator tracks it."""

    spec: AgentSpec
    proc: subprocess.Popen[bytes] | None = None
    ready: bool = False
    deaths: int = 0
    retired: bool = False
    error: str | None = None
    pid: int | None = None
    work: Work | None = None
    attempt: tuple[int, Path] | None = None
    in_flight: Key | None = None
    done: set[Key] = field(default_factory=set)
    buffer: bytes = b""

    def takes(self, work: Work) -> bool:
        if work.uuid is not None:
            return work.uuid == self.spec.gpu_uuid
        return work.model is None or work.model == self.spec.gpu_name


@dataclass
class Outcome:
    """What happened: the agents that died (uuid, pid, exit status), the cards given up, the
    agents that refused to start (their one-line reasons), the points the coordinator wrote
    as crashed, and the shards left without an agent (resumable)."""

    deaths: list[tuple[str, int, int]] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    crashed: list[Key] = field(default_factory=list)
    unrun: list[str] = field(default_factory=list)


def initial_work(run_dir: Path, shards: Sequence[Shard], uuids: set[str]) -> list[Work]:
    """The queue for a new or resumed run: each shard's missing points, on the card that has
    its chain of attempts when that card is here, else from the start on its model."""
    queue = []
    for shard in longest_first(shards):
        chain = chosen_chain(read_attempts(run_dir, shard), shard)
        cards = [a for a in chain if a.rows]
        if not cards:
            queue.append(Work(shard, shard.keys))
            continue
        card, model = cards[-1].gpu_uuid, str(cards[-1].fleet.get("gpu_name") or "") or None
        if set(shard.keys) <= set(chain_rows(chain)):
            continue
        if card in uuids:
            queue.append(Work(shard, pending(run_dir, shard, card)[0], uuid=card))
        else:
            queue.append(Work(shard, shard.keys, model=model))
    return queue


def run_local(
    run_dir: Path,
    placements: Sequence[Placement],
    *,
    only: Collection[str] | None = None,
    runner: str = "linbench",
    max_restarts: int = 1,
    busy_wait_s: float = 0.0,
    env: Mapping[str, str] | None = None,
    heard: Heard | None = None,
) -> Outcome:
    """Run (or resume) the plan in ``run_dir``/fleet.json (its shards ``only``, when given)
    on one agent per placement. ``heard(gpu_uuid, event)`` hears every agent's events (a
    progress display)."""
    shards, digest, _settings = read_plan(run_dir)
    chosen = [shard for shard in shards if only is None or shard.id in only]
    specs = [AgentSpec.of(p, runner=runner, busy_wait_s=busy_wait_s, parent_pid=os.getpid()) for p in placements]
    coordinator = Coordinator(run_dir, digest, specs, max_restarts, dict(env or os.environ), heard)
    return coordinator.run(initial_work(run_dir, chosen, {s.gpu_uuid for s in specs}))


class Coordinator:
    """The queue and the agents' lives (see the module's doc)."""

    def __init__(
        self,
        run_dir: Path,
        digest: str,
        specs: list[AgentSpec],
        max_restarts: int,
        env: dict[str, str],
        heard: Heard | None = None,
    ) -> None:
        self.run_dir, self.digest = run_dir, digest
        self.slots = [Slot(spec) for spec in specs]
        self.max_restarts, self.env, self.heard = max_restarts, env, heard
        self.queue: list[Work] = []
        self.outcome = Outcome()
        self.selector = selectors.DefaultSelector()
        (run_dir / AGENTS_DIR).mkdir(parents=True, exist_ok=True)

    def run(self, queue: list[Work]) -> Outcome:
        self.queue = queue
        if not self.queue:
            return self.outcome
        for slot in self.slots:
            self._start(slot)
        try:
            while any(s.proc is not None for s in self.slots):
                if not self.queue and not any(s.work for s in self.slots):
                    self._stop_all()
                for key, _ in self.selector.select():
                    self._read(key.data)
        finally:
            self._stop_all()
            self.selector.close()
        return self.outcome

    def _start(self, slot: Slot) -> None:
        log = (self.run_dir / AGENTS_DIR / f"{slot.spec.gpu_index}-{slot.spec.visible_id}.log").open("ab")
        slot.proc = subprocess.Popen(
            agent_command(slot.spec),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=agent_env(slot.spec, self.env),
        )
        log.close()
        slot.ready, slot.buffer = False, b""
        assert slot.proc.stdout is not None
        self.selector.register(slot.proc.stdout, selectors.EVENT_READ, slot)

    def _read(self, slot: Slot) -> None:
        assert slot.proc is not None and slot.proc.stdout is not None
        data = os.read(slot.proc.stdout.fileno(), 65536)
        if not data:
            self._ended(slot)
            return
        slot.buffer += data
        *lines, slot.buffer = slot.buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self._event(slot, json.loads(line))

    def _event(self, slot: Slot, event: dict[str, Any]) -> None:
        kind = event["event"]
        if self.heard is not None:
            self.heard(slot.spec.gpu_uuid, event)
        if kind == "ready":
            slot.ready = True
            slot.spec = replace(slot.spec, host=str(event.get("host") or slot.spec.host))
            self._assign_idle()
        elif kind == "attempt":
            slot.attempt = (int(event["attempt"]), Path(event["path"]))
        elif kind == "start":
            slot.in_flight = tuple(event["key"])
        elif kind == "row":
            slot.done.add(tuple(event["key"]))
            slot.in_flight = None
        elif kind == "done":
            slot.work, slot.attempt, slot.done = None, None, set()
            self._assign(slot)
        elif kind == "error":
            slot.error = str(event["message"])

    def _assign(self, slot: Slot) -> None:
        """Give an idle agent the first queued work it can take."""
        work = next((w for w in self.queue if w.uuid == slot.spec.gpu_uuid), None)
        work = work or next((w for w in self.queue if w.uuid is None and slot.takes(w)), None)
        if work is None:
            return
        self.queue.remove(work)
        slot.work, slot.attempt, slot.in_flight, slot.done = work, None, None, set()
        message = {"shard": work.shard.as_json(), "keys": [list(k) for k in work.keys], "run_dir": str(self.run_dir)}
        self._send(slot, message | {"plan_hash": self.digest})

    @staticmethod
    def _send(slot: Slot, message: dict[str, Any]) -> None:
        assert slot.proc is not None and slot.proc.stdin is not None
        try:
            slot.proc.stdin.write((json.dumps(message) + "\n").encode())
            slot.proc.stdin.flush()
        except (OSError, ValueError):
            pass  # it died: its standard output's end says so next

    def _stop_all(self) -> None:
        """Tell every idle agent to stop (closing its input says the same)."""
        for slot in self.slots:
            if slot.proc is not None and slot.work is None and slot.proc.stdin and not slot.proc.stdin.closed:
                self._send(slot, {"stop": True})
                _close(slot.proc.stdin)

    def _ended(self, slot: Slot) -> None:
        """An agent's output closed: it stopped, refused to start, or died."""
        assert slot.proc is not None and slot.proc.stdout is not None  # started with stdout=PIPE
        self.selector.unregister(slot.proc.stdout)
        _close(slot.proc.stdout)
        _close(slot.proc.stdin)
        status = slot.proc.wait()
        pid, slot.proc = slot.proc.pid, None
        if slot.work is not None:  # it died (or gave up with an error) in the middle of a shard
            if slot.error is not None:
                self.outcome.errors.append(f"{slot.spec.visible_id}: {slot.error}")
                slot.error = None
            self._died(slot, pid, status)
        elif slot.error is not None or not slot.ready:
            self._refused(slot, status)
        elif status != 0:
            self._died(slot, pid, status)

    def _refused(self, slot: Slot, status: int) -> None:
        reason = slot.error or f"exited with status {status} before it was ready (see {AGENTS_DIR}/)"
        self.outcome.errors.append(f"{slot.spec.visible_id}: {reason}")
        self._retire(slot)

    def _died(self, slot: Slot, pid: int, status: int) -> None:
        self.outcome.deaths.append((slot.spec.gpu_uuid, pid, status))
        slot.deaths += 1
        work, slot.work = slot.work, None
        rest: tuple[Key, ...] = ()
        if work is not None:
            if slot.in_flight is not None:
                why = f"the agent on {slot.spec.gpu_uuid} (pid {pid}) died ({died(status)}) while this point ran"
                self._write_crashed(slot, work.shard, [slot.in_flight], why, pid)
                slot.done.add(slot.in_flight)
            rest = tuple(k for k in work.keys if k not in slot.done)
        if slot.deaths <= self.max_restarts:
            if work is not None and rest:
                self.queue.insert(0, Work(work.shard, rest, uuid=slot.spec.gpu_uuid))
            self._start(slot)
        else:
            self._retire(slot)
            if work is not None and rest:
                self._requeue_elsewhere(slot, work.shard, rest)
        self._assign_idle()

    def _assign_idle(self) -> None:
        """Hand work to every idle agent, in device order, once every agent has started (or
        failed to): the first shards go out in the same way on every run."""
        if any(s.proc is not None and not s.ready for s in self._live()):
            return
        for slot in self._live():
            if slot.proc is not None and slot.ready and slot.work is None:
                self._assign(slot)

    def _retire(self, slot: Slot) -> None:
        slot.retired = True
        self.outcome.retired.append(slot.spec.gpu_uuid)
        for work in [w for w in self.queue if w.uuid == slot.spec.gpu_uuid]:
            self.queue.remove(work)
            self._requeue_elsewhere(slot, work.shard, work.keys)
        for work in [w for w in self.queue if not any(s.takes(w) for s in self._live())]:
            self.queue.remove(work)  # no agent left for it: the run stays resumable
            self.outcome.unrun.append(work.shard.id)

    def _requeue_elsewhere(self, slot: Slot, shard: Shard, rest: tuple[Key, ...]) -> None:
        """A shard of a card given up starts over on another card of its model; with none left,
        its remaining points end as crashed."""
        again = Work(shard, shard.keys, model=slot.spec.gpu_name)
        if any(s.takes(again) for s in self._live()):
            self.queue.insert(0, again)
            return
        why = f"the agents on {slot.spec.gpu_uuid} died {slot.deaths} times and no other {slot.spec.gpu_name} is left"
        self._write_crashed(slot, shard, list(rest), why)

    def _plan(self, keys: Sequence[Key]) -> dict[str, Any]:
        return {"plan_hash": self.digest, "keys": [list(k) for k in keys]}

    def _live(self) -> list[Slot]:
        return [s for s in self.slots if not s.retired]

    def _write_crashed(self, slot: Slot, shard: Shard, keys: list[Key], why: str, pid: int | None = None) -> None:
        """Rows for points no agent will run, in the shard's latest attempt folder (on this
        card: the coordinator is its only writer now), or a new one."""
        found = [a for a in read_attempts(self.run_dir, shard) if (a.path / "results.csv").is_file()]
        if found:
            attempt, folder = found[-1].number, found[-1].path
        else:
            attempt, folder = claim_attempt(self.run_dir, shard.id)
            fleet = slot.spec.where(shard.id, attempt, slot.spec.cores, None) | {"gpu_name": slot.spec.gpu_name}
            RunStore.create_at(folder).write_meta({"status": "abandoned", "fleet": fleet | self._plan(keys)})
        store = RunStore.open(folder)  # repairs a line the dead agent left half-written
        where = slot.spec.where(shard.id, attempt, slot.spec.cores, pid)
        write_crashed(store, keys, where, why, slot.spec.gpu_name)
        self.outcome.crashed += keys


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()


__all__ = ["FleetError", "Outcome", "Work", "initial_work", "run_local"]
