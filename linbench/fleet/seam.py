"""The seam between an agent and the runner: "run these points of the plan into this folder".

An agent owns a GPU, a run folder per shard attempt and where each row was measured; the
runner owns measurement (gates, worker processes, skip rules, rows). The agent hands a
``RunPoints`` the shard's points (plan order) and the attempt's folder, claimed and empty,
and its hooks around each point: the runner's own ``PointHooks`` (linbench/runner/hooks.py),
the same a plain run has. The runner makes the run in the folder (meta.json with the
``fleet`` section it is given) and marks it complete.

A runner is named ``module:function``; ``linbench`` names linbench's own
(linbench/fleet/real_runner.py, through linbench/runner/pipeline.py), and is what every
agent runs unless told otherwise. The test suite names its own stand-ins (a runner that
measures nothing, a stall for the kill tests: tests/fleet/fake_runner.py) through
``--runner`` or, for a whole ``linbench run``, the environment variable ``RUNNER_ENV``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linbench.fleet.errors import FleetError
from linbench.results.record import Key
from linbench.runner.hooks import PointHooks

LINBENCH_RUNNER = "linbench"
# What LINBENCH_RUNNER names: imported by name, so this module and the runner do not import each other.
_OWN = "linbench.fleet.real_runner:run_linbench_points"
# The point runner a ``linbench run`` over several GPUs hands its agents (module:function),
# when set: for the test suite, as LINBENCH_FAKE_DEVICES is.
RUNNER_ENV = "LINBENCH_FLEET_RUNNER"


@dataclass(frozen=True)
class ShardWork:
    """What an agent asks of its runner: some points of one shard (plan order) of the sweep
    ``sweep`` (meta.json's sweep section, as the coordinator planned it), and what the
    attempt's meta.json must say besides."""

    shard_id: str
    keys: tuple[Key, ...]
    sweep: Mapping[str, Any] = field(default_factory=dict)
    command: str = ""  # the command line that started the fleet run, for meta.json
    fleet: Mapping[str, Any] = field(default_factory=dict)  # meta.json's fleet section
    history: tuple[Mapping[str, Any], ...] = ()  # rows of earlier attempts of the shard on this GPU
    device_name: str = ""  # the GPU's model, for a runner that measures nothing


RunPoints = Callable[[ShardWork, Path, PointHooks], None]


def default_runner() -> str:
    """The runner a fleet run's agents use: ``RUNNER_ENV``'s where set, else linbench's own."""
    return os.environ.get(RUNNER_ENV) or LINBENCH_RUNNER


def runner(name: str) -> RunPoints:
    """The runner ``name`` (``linbench``, or ``module:function``); FleetError in one line when
    it names nothing that can be called."""
    module_name, sep, function = (_OWN if name == LINBENCH_RUNNER else name).partition(":")
    if not sep or not module_name or not function:
        raise FleetError(f"no point runner {name!r}: name {LINBENCH_RUNNER!r} or a module:function")
    try:
        found = getattr(importlib.import_module(module_name), function, None)
    except ImportError as exc:
        raise FleetError(f"no point runner {name!r}: {exc}") from None
    if not callable(found):
        raise FleetError(f"no point runner {name!r}: {module_name} has no function {function}")
    return found
