"""The seam between an agent and the runner: "run these points of the plan into this folder".

An agent owns a GPU, a run folder per shard attempt and the per-row provenance; the runner
owns measurement (gates, worker processes, skip rules, rows). The agent calls a ``RunPoints``
with the shard's points (plan order), the open run folder, and two hooks:

* ``before_point(key)``, called before a point's first process: a reason to skip the point
  (another process holds the GPU) or None to measure it; the runner writes a ``skipped``
  row with that reason;
* ``after_row(key, row)``, called once the point's results row is written.

The runner behind it is chosen by name (``RUNNERS``). ``fake`` is the test suite's stand-in,
which measures nothing and runs only on a fake inventory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from linbench.fleet.errors import FleetError
from linbench.fleet.shards import PointKey
from linbench.results.store import RunStore


class PointHooks(Protocol):
    def before_point(self, key: PointKey) -> str | None: ...

    def after_row(self, key: PointKey, row: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class ShardWork:
    """What an agent is asked to run: some points of one shard (plan order), under a request
    the runner understands (its settings: timing, processes, params; opaque to the fleet)."""

    shard_id: str
    keys: tuple[PointKey, ...]
    request: Mapping[str, Any] = field(default_factory=dict)
    device_name: str = ""  # the GPU's model, for the rows' device_name


RunPoints = Callable[[ShardWork, RunStore, PointHooks], None]


def runner(name: str) -> RunPoints:
    """The runner called ``name``; FleetError naming the known ones otherwise."""
    if name == "fake":
        from linbench.fleet.fake_runner import run_fake_points

        return run_fake_points
    raise FleetError(f"no point runner {name!r} (known: {', '.join(RUNNERS)})")


RUNNERS: Sequence[str] = ("fake",)
