"""The fleet's refusals: each a ValueError with a one-line message saying what to change."""

from __future__ import annotations


class FleetError(ValueError):
    """Something the fleet refuses to do; the message is one line."""


class DeviceSpecError(FleetError):
    """A device SPEC (``cuda:0-7``, ``GPU-<uuid>``, ``all``) that names no usable GPU."""


class PlacementError(FleetError):
    """Too few CPU cores to give every agent its own."""


class ShardSpecError(FleetError):
    """A ``--shard K/N`` that is not one."""


class MergeError(FleetError):
    """Shard folders that cannot be merged into one run without mixing what must not mix."""


class AgentError(FleetError):
    """An agent that must not run: it sees another GPU than it was given, or none."""
