"""A whole node's part of a fleet run: the local executor on every GPU this process may use.

``python -m linbench.fleet.node --run-dir RUN --shards s000,s003`` is what a node-exclusive
Slurm task (linbench/fleet/slurm.py) runs on its node: one agent per GPU the task was given
(its CUDA_VISIBLE_DEVICES), pinned to cores of its own among the task's, on the shards named.
It exits 0 when every one of them has a row for each point, 1 when some are left (an agent
that refused to start, a card given up), 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from linbench.fleet.device_spec import select_devices
from linbench.fleet.errors import FleetError
from linbench.fleet.inventory import read_inventory
from linbench.fleet.local import Outcome, run_local
from linbench.fleet.placement import Placement, plan_placement, read_siblings


def node_placements(
    cpus_per_gpu: int | None = None, oversubscribe: bool = False, allow_shared: bool = False
) -> tuple[Placement, ...]:
    """An agent per GPU this process may use, each on cores of its own."""
    inventory = read_inventory()
    choices = select_devices("all", inventory, os.environ, allow_shared=allow_shared)
    cpus = os.sched_getaffinity(0)
    return plan_placement(
        choices, cpus, cores_per_gpu=cpus_per_gpu, oversubscribe=oversubscribe, siblings=read_siblings(cpus)
    )


def run_node(run_dir: Path, ids: list[str], runner: str, oversubscribe: bool = False) -> Outcome:
    return run_local(run_dir, node_placements(oversubscribe=oversubscribe), only=ids, runner=runner)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m linbench.fleet.node")
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--shards", required=True)
    parser.add_argument("--runner", default="linbench")
    parser.add_argument("--oversubscribe", action="store_true")
    args = parser.parse_args(argv)
    try:
        outcome = run_node(args.run_dir, [i for i in args.shards.split(",") if i], args.runner, args.oversubscribe)
    except FleetError as exc:
        print(f"linbench node: error: {exc}", file=sys.stderr)
        return 2
    for line in [*outcome.errors, *(f"shard {s} left without an agent" for s in outcome.unrun)]:
        print(f"linbench node: {line}", file=sys.stderr)
    return 1 if outcome.unrun or outcome.retired else 0


if __name__ == "__main__":
    sys.exit(main())
