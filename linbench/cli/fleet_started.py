"""A fleet run ready to go, as ``linbench run`` over several GPUs hands it from planning
(cli/fleet_flow.py) to what it prints (cli/fleet_report.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from linbench.cli.fleet_options import FleetOptions

if TYPE_CHECKING:
    from linbench.fleet.plan import FleetPlan
    from linbench.runner.pipeline import Prepared


@dataclass(frozen=True)
class Started:
    """A fleet run ready to go: its folder, its plan, the sweep planned here, and how it runs."""

    run_dir: Path
    plan: FleetPlan
    prepared: Prepared
    mode: str  # local, slurm, ray, shard
    resumed: bool
    options: FleetOptions  # as given, or for --resume as the run was started
    part: str | None = None  # shard: K/N
