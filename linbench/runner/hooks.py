"""What whoever runs a sweep's points may add around each point, beside the listener.

A run spread over several GPUs (linbench/fleet/) runs each GPU's points through the same
runner, in an agent process that owns that GPU. The agent needs three things of the runner,
and these hooks are them:

* ``before_point(point)``, before each process that measures the point: a reason not to
  measure it now (another process holds the GPU), or None. A point refused before its first
  process gets a ``skipped`` row with that reason; one refused before a later process ends
  as the failure of that process (``process 2 of 3: ...``), as any failed process does;
* ``row_columns(point)``: columns stamped on the point's results row (where and when it ran:
  the ``where`` columns of linbench/results/schema.py), whatever its status;
* ``after_row(point, row)``: the row as written.

A plain ``linbench run`` has none (``NO_HOOKS``): its rows keep those columns empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from linbench.sweep.points import Point


class PointHooks(Protocol):
    def before_point(self, point: Point) -> str | None: ...

    def row_columns(self, point: Point) -> Mapping[str, Any]: ...

    def after_row(self, point: Point, row: Mapping[str, Any]) -> None: ...


class NoHooks:
    """Measure every point, stamp nothing."""

    def before_point(self, point: Point) -> str | None:
        return None

    def row_columns(self, point: Point) -> Mapping[str, Any]:
        return {}

    def after_row(self, point: Point, row: Mapping[str, Any]) -> None:
        return None


NO_HOOKS = NoHooks()

__all__ = ["NO_HOOKS", "NoHooks", "PointHooks"]
