"""One session of a run (the run itself, and each --resume of it) and the machine it met.

At its start a session samples the machine over a short window (linbench/machine/load.py),
chooses a CPU worker's threads from the idle cores that window found (threads.py), and for a
new ``linbench run`` measures the device's ceilings with those threads (machine/ceilings.py;
nothing else runs then, so they describe the machine the points meet). Between points it
samples again (every SAMPLE_INTERVAL_S at most) and follows the idle cores. meta.json's
``load.sessions`` keeps one record per session: when it ran, its threads, the idle cores,
load average and busy verdict at its start, and the points it wrote (how many of them
oversubscribed), so that a run resumed under other load says so (results/machine_load.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import torch

from linbench.machine.cpu_use import idle_core_count
from linbench.machine.load import MIN_WINDOW_S, LoadMonitor
from linbench.results.meta import LoadSection
from linbench.results.store import RunStore, RunStoreError
from linbench.runner.ledger import TimeLedger
from linbench.runner.plan import RunPlan
from linbench.runner.threads import BY_HAND, ThreadsChoice, initial_choice, measure_idle_cores

# A re-check of the idle cores before a process is measured again watches this long.
RECHECK_WINDOW_S = 0.1
# After a re-check found the cores still taken, the next this many seconds assume they still
# are: on a machine busy for minutes every process is oversubscribed, and a re-check each
# would cost more than it could save.
RECHECK_HOLD_S = 10.0


class Session:
    """The load, threads and record of one session of a run into ``store``."""

    def __init__(self, plan: RunPlan, store: RunStore, ledger: TimeLedger) -> None:
        self.plan = plan
        self.store = store
        self.ledger = ledger
        recorded = self._recorded_load()
        self.earlier: list[Mapping[str, Any]] = list(recorded.sessions) if recorded is not None else []
        gpu = (plan.device.index or 0) if plan.device.type == "cuda" else None
        previous = recorded.section() if recorded is not None else None
        self.load = LoadMonitor(gpu_index=gpu, threads=plan.threads or torch.get_num_threads(), previous=previous)
        self.choice: ThreadsChoice | None = None
        self._taken_until: float | None = None  # a re-check found the cores taken: until then, assume so
        self.record: dict[str, Any] = {}

    @property
    def threads(self) -> int | None:
        """The torch threads the next worker task runs with (None: torch's default)."""
        return self.choice.threads if self.choice is not None else self.plan.threads

    def begin(self) -> None:
        """The start sample, the threads it leads to, and (a new run) the ceilings."""
        started = time.perf_counter()
        sample = self.load.sample("start")
        if self.plan.device.type == "cpu":
            idle = sample.get("idle_cores")
            self.choice = initial_choice(self.plan.threads, torch.get_num_threads(), idle, MIN_WINDOW_S)
            self.load.threads = self.choice.threads
        self.record = {
            "session": len(self.earlier) + 1,
            "started_at": sample["at"],
            "threads": self.threads,
            "threads_by": self.choice.by if self.choice is not None else None,
            "idle_cores": sample.get("idle_cores"),
            "load_avg": sample.get("load_avg"),
            "busy": bool(sample.get("busy")),
            "points": 0,
            "oversubscribed": 0,
        }
        updates: dict[str, Any] = {}
        if self.choice is not None:
            updates["timing"] = self._meta().get("timing", {}) | {
                "threads": self.choice.threads,
                "threads_choice": self.choice.section(),
            }
        if self._wants_ceilings():
            updates["ceilings"] = self._ceilings()
        self.store.update_meta(updates | {"load": self._load_section()})
        self.ledger.add_startup(time.perf_counter() - started)

    def between(self) -> None:
        """A load sample when one is due; the threads follow its idle cores."""
        if not self.load.due():
            return
        sample = self.load.sample("during")
        self._follow(sample.get("idle_cores"), sample["at"])
        self.store.update_meta({"load": self._load_section()})

    def recheck(self) -> bool:
        """Watch the idle cores now, and follow them; True when the threads chosen now would
        not be oversubscribed (a process measured again could come out clean)."""
        if self._taken_until is not None and time.monotonic() < self._taken_until:
            return False
        idle = measure_idle_cores(RECHECK_WINDOW_S)
        self._follow(idle, _now())
        clean = idle is not None and self.threads is not None and idle_core_count(idle) >= self.threads
        self._taken_until = None if clean else time.monotonic() + RECHECK_HOLD_S
        return clean

    def count(self, row: dict[str, Any]) -> None:
        """A results row this session wrote."""
        if self.record:
            self.record["points"] += 1
            self.record["oversubscribed"] += bool(row.get("oversubscribed"))

    def end(self) -> None:
        self.load.sample("end")
        if self.record:
            self.record["ended_at"] = _now()
        self.store.update_meta({"load": self._load_section()})

    def _follow(self, idle: float | None, at: str) -> None:
        if self.choice is None or self.choice.by == BY_HAND:
            return
        new = self.choice.with_idle(idle)
        if new.threads != self.choice.threads:
            change = {"at": at, "threads": new.threads, "idle_cores": new.idle_cores}
            self.record.setdefault("threads_changes", []).append(change)
        self.choice = new
        self.load.threads = new.threads

    def _wants_ceilings(self) -> bool:
        """A ``linbench run`` folder without its ceilings yet (a folder made other than by the
        command, as the runner's tests make them, measures none)."""
        meta = self._meta()
        sweep = meta.get("sweep")
        return isinstance(sweep, Mapping) and sweep.get("command") == "run" and "ceilings" not in meta

    def _ceilings(self) -> dict[str, Any]:
        from linbench.machine.ceilings import run_ceilings

        dtypes = sorted({p.dtype for p in self.plan.points})
        with _torch_threads(self.threads if self.plan.device.type == "cpu" else None):
            return run_ceilings(self.plan.device, dtypes)

    def _load_section(self) -> dict[str, Any]:
        sessions: list[Mapping[str, Any]] = [*self.earlier, self.record] if self.record else self.earlier
        samples: list[Mapping[str, Any]] = list(self.load.samples)
        return LoadSection(samples, any(s.get("busy") for s in samples), self._rest(), sessions).section()

    def _rest(self) -> dict[str, Any]:
        section = self.load.section()
        return {key: value for key, value in section.items() if key not in ("busy", "samples")}

    def _meta(self) -> dict[str, Any]:
        try:
            return self.store.read_meta()
        except RunStoreError:
            return {}

    def _recorded_load(self) -> LoadSection | None:
        """The load of an earlier session of this run (--resume): its samples go on."""
        try:
            return LoadSection.read(self.store.read_meta())
        except RunStoreError:
            return None


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """torch's thread count set to ``threads`` for the block (None: left as it is)."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
