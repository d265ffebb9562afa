"""linbench's own runner behind the seam (linbench/fleet/seam.py): today's pipeline, run by an
agent on its shards one after another.

The agent plans the coordinator's sweep again from its recorded ``sweep`` section
(``pipeline.prepare_recorded``, as ``--resume`` does), on the one GPU it sees, and measures
the shard's points into the attempt folder (``pipeline.start(at=...)``, then
``pipeline.run_points``) with the agent's hooks around each point: fresh worker processes,
correctness gates, skip rules and rows exactly as a plain ``linbench run`` makes them. An
agent plans once: its later shards reuse the plan, and the ceilings its first attempt
measured on its GPU (a ceiling describes the device, which does not change between shards).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linbench.fleet.errors import AgentError
from linbench.fleet.seam import ShardWork
from linbench.runner.hooks import PointHooks

if TYPE_CHECKING:
    from linbench.runner.pipeline import Prepared

# This agent process's plans (by their recorded sweep) and the ceilings measured for each.
_PLANS: dict[str, tuple[Prepared, dict[str, Any] | None]] = {}


def run_linbench_points(work: ShardWork, folder: Path, hooks: PointHooks) -> None:
    """Measure ``work``'s points into a new run at ``folder``; AgentError when the sweep does
    not plan here as it did for the coordinator, or the run could not finish."""
    from linbench.runner.pipeline import run_points, start

    prepared, ceilings = _plan(work.sweep)
    try:
        store = start(prepared, work.command or None, at=folder, meta={"fleet": dict(work.fleet)}, ceilings=ceilings)
        outcome = run_points(prepared, work.keys, store, hooks, history=work.history)
        if ceilings is None:  # the run's first session measured them: later shards reuse them
            _remember_ceilings(work.sweep, store.read_meta().get("ceilings"))
    except ValueError as exc:  # RunSetupError, RunStoreError: said in one line, not a traceback
        raise AgentError(f"shard {work.shard_id}: {exc}") from None
    if outcome.status == "interrupted":
        raise KeyboardInterrupt
    if outcome.status != "complete":
        raise AgentError(f"shard {work.shard_id} stopped: {outcome.failure}")


def _plan(sweep: Mapping[str, Any]) -> tuple[Prepared, dict[str, Any] | None]:
    """This agent's plan of ``sweep`` (made on the first shard), and its ceilings once measured."""
    from linbench.runner.pipeline import prepare_recorded

    key = json.dumps(sweep, sort_keys=True, default=str)
    if key not in _PLANS:
        try:
            _PLANS[key] = (prepare_recorded(sweep), None)
        except ValueError as exc:  # a plugin or a device missing on this host
            raise AgentError(f"the sweep cannot be planned here: {exc}") from None
    return _PLANS[key]


def _remember_ceilings(sweep: Mapping[str, Any], ceilings: Any) -> None:
    key = json.dumps(sweep, sort_keys=True, default=str)
    if isinstance(ceilings, dict) and "error" not in ceilings:
        _PLANS[key] = (_PLANS[key][0], ceilings)
