"""The seam between an agent and the runner: "run these points of the plan into this folder".

An agent owns a GPU, a run folder per shard attempt and where each row was measured; the
runner owns measurement (gates, worker processes, skip rules, rows). The agent hands a
``RunPoints`` the shard's points (plan order) and the attempt's folder, claimed and empty,
and three hooks, called by point key:

* ``before_point(key)``, before each process that measures a point: a reason not to measure
  it (another process holds the GPU) or None; the runner writes a ``skipped`` row with it;
* ``row_columns(key)``: the ``where`` columns stamped on the point's results row;
* ``after_row(key, row)``, once the row is written.

The runner makes the run in the folder (meta.json with the ``fleet`` section it is given)
and marks it complete. It is chosen by name (``RUNNERS``): ``linbench`` is linbench's own
runner (linbench/fleet/real_runner.py, through linbench/runner/pipeline.py); ``fake`` is the
test suite's stand-in, which measures nothing and runs only on a fake inventory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from linbench.fleet.errors import FleetError
from linbench.fleet.shards import PointKey


class PointHooks(Protocol):
    def before_point(self, key: PointKey) -> str | None: ...

    def row_columns(self, key: PointKey) -> Mapping[str, Any]: ...

    def after_row(self, key: PointKey, row: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class ShardWork:
    """What an agent asks of its runner: some points of one shard (plan order) of the sweep
    ``sweep`` (meta.json's sweep section, as the coordinator planned it), and what the
    attempt's meta.json must say besides."""

    shard_id: str
    keys: tuple[PointKey, ...]
    sweep: Mapping[str, Any] = field(default_factory=dict)
    command: str = ""  # the command line that started the fleet run, for meta.json
    fleet: Mapping[str, Any] = field(default_factory=dict)  # meta.json's fleet section
    history: tuple[Mapping[str, Any], ...] = ()  # rows of earlier attempts of the shard on this GPU
    device_name: str = ""  # the GPU's model, for the fake runner's rows


RunPoints = Callable[[ShardWork, Path, PointHooks], None]
RUNNERS: Sequence[str] = ("linbench", "fake")


def runner(name: str) -> RunPoints:
    """The runner called ``name``; FleetError naming the known ones otherwise."""
    if name == "linbench":
        from linbench.fleet.real_runner import run_linbench_points

        return run_linbench_points
    if name == "fake":
        from linbench.fleet.fake_runner import run_fake_points

        return run_fake_points
    raise FleetError(f"no point runner {name!r} (known: {', '.join(RUNNERS)})")
