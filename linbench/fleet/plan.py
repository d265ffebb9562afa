"""A sweep planned for the fleet: its points cut into shards, written once as RUN/fleet.json.

The coordinator (``linbench run --devices``, ``--shard K/N``, ``--executor``) plans the sweep
as ``linbench run`` does (linbench/runner/pipeline.py: every name, size and device checked
before anything is made), cuts the plan's points into shards by scenario, each costed by the
estimate's model so the longest go out first, and records the sweep itself (meta.json's
``sweep`` section) beside them: every agent plans that recorded sweep again on its own GPU,
so no suite file, option or working folder has to reach the hosts that run it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linbench.fleet.folders import read_plan, write_plan
from linbench.fleet.shards import Shard, make_shards, plan_hash
from linbench.results.record import Key

if TYPE_CHECKING:
    from linbench.runner.pipeline import Prepared

# The axis a scenario runs along: the key column holding the length (a decode's context too).
ALONG = ("seq",)


@dataclass(frozen=True)
class FleetPlan:
    """The shards of a planned sweep, the plan's hash, and fleet.json's settings."""

    shards: tuple[Shard, ...]
    digest: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def points(self) -> int:
        return sum(len(shard.points) for shard in self.shards)

    def write(self, run_dir: Path) -> None:
        """RUN/fleet.json (the same file from every task that plans the same sweep; MergeError
        for another plan's folder)."""
        write_plan(run_dir, self.shards, self.digest, self.settings)


def plan_fleet(prepared: Prepared, command: str, **settings: Any) -> FleetPlan:
    """The shards of ``prepared``'s points, costed by the estimate, with the recorded sweep and
    ``command`` (what started the run, for each attempt's meta.json) in fleet.json's settings,
    and ``settings`` besides (the devices and executor, for ``--resume``)."""
    from linbench.sweep.estimate import estimate_s

    plan = prepared.plan
    by_key = {point.key: point for point in plan.points}

    def cost(key: Key) -> float:
        return estimate_s([by_key[key]], plan.timing, plan.timeout_s, plan.kind, plan.processes.wanted)

    fixed_tokens = plan.tokens is not None
    shards = make_shards([point.key for point in plan.points], cost, along=ALONG, fixed_tokens=fixed_tokens)
    sweep = prepared.sweep
    recorded = {"along": list(ALONG), "fixed_tokens": fixed_tokens, "sweep": sweep, "command": command}
    return FleetPlan(shards, plan_hash(shards, sweep), recorded | settings)


def read_fleet_plan(run_dir: Path) -> FleetPlan:
    """The plan a fleet run folder holds (MergeError when it holds none)."""
    shards, digest, settings = read_plan(run_dir)
    return FleetPlan(shards, digest, settings)
