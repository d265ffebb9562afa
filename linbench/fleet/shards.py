"""Shards: the points that must be measured on one physical GPU, and their order.

A shard is by default one *scenario*: every impl and every length of one fixed dtype, mode,
masking, batch, heads and head dims (what ``report``, ``plot`` and crossovers compare). One
shard runs in plan order on one card, so the skip rules (an OOM or a timeout at one length
stands for the longer ones), crossovers, fitted exponents and the repeated processes of a
point all see one device: cards of the same model differ by more than a gate's threshold.

Shards are handed out longest first (by an estimated cost the caller gives), so the devices
finish together; ``--shard K/N`` splits them into N parts of nearly equal cost the same way,
and every launcher that computes the parts from the same plan gets the same ones.

Points are taken as keys: the KEY_COLUMNS values as strings, as results.csv holds them
(``linbench.results.record.Key``, ``linbench.sweep.points.Point.key``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from linbench.fleet.errors import ShardSpecError
from linbench.results.record import Key, row_key
from linbench.results.schema import KEY_COLUMNS

Split = Literal["scenario", "series", "point"]
SPLITS: tuple[Split, ...] = ("scenario", "series", "point")
# What a shard of each split leaves free (all its values run on one card).
_FREE: dict[str, frozenset[str]] = {
    "scenario": frozenset({"variant", "impl"}),
    "series": frozenset(),
    "point": frozenset(),
}


@dataclass(frozen=True)
class Shard:
    """Points that run on one card, in plan order: (index in the plan, key) each."""

    id: str
    scenario: tuple[tuple[str, str], ...]  # the columns the shard holds fixed → values
    points: tuple[tuple[int, Key], ...]
    cost: float

    @property
    def keys(self) -> tuple[Key, ...]:
        return tuple(key for _, key in self.points)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scenario": dict(self.scenario),
            "points": [[index, list(key)] for index, key in self.points],
            "cost": self.cost,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Shard:
        points = tuple((int(index), tuple(str(v) for v in key)) for index, key in data["points"])
        scenario = tuple((str(k), str(v)) for k, v in dict(data["scenario"]).items())
        return cls(str(data["id"]), scenario, points, float(data["cost"]))


def key_of(point: Any) -> Key:
    """A point's key: a ``Point``'s own, a KEY_COLUMNS tuple, or a row (mapping)."""
    if hasattr(point, "key"):
        return tuple(point.key)
    if isinstance(point, Mapping):
        return row_key(point)
    key = tuple(str(v) for v in point)
    if len(key) != len(KEY_COLUMNS):
        raise ValueError(f"a point key has {len(KEY_COLUMNS)} values ({', '.join(KEY_COLUMNS)}), not {len(key)}")
    return key


def scenario_of(
    key: Key, split: Split = "scenario", along: Sequence[str] = ("seq",), fixed_tokens: bool = False
) -> tuple[tuple[str, str], ...]:
    """The columns (and values) a shard holding ``key`` keeps fixed. ``along``: the axes a
    scenario runs along (its lengths); ``fixed_tokens``: batch·seq is held fixed (``run
    --tokens``), so the batch shrinks along the curve and the token count is fixed instead."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    row = dict(zip(KEY_COLUMNS, key, strict=True))
    if split == "point":
        return tuple(row.items())
    free = set(_FREE[split]) | set(along)
    if fixed_tokens and "seq" in free:
        free.add("batch")
    if "heads" in free:  # key/value and value heads go with the heads (as many, or a fixed share or multiple)
        free.update(("kv_heads", "v_heads"))
    fixed = [(column, value) for column, value in row.items() if column not in free]
    if fixed_tokens and "seq" in free:
        fixed.append(("tokens", str(int(row["batch"]) * int(row["seq"]))))
    return tuple(fixed)


def make_shards(
    points: Iterable[Any],
    cost: Callable[[Key], float] | None = None,
    *,
    split: Split = "scenario",
    along: Sequence[str] = ("seq",),
    fixed_tokens: bool = False,
) -> tuple[Shard, ...]:
    """The shards of ``points`` (in plan order), numbered s000, s001, ... by their first point."""
    groups: dict[tuple[tuple[str, str], ...], list[tuple[int, Key]]] = {}
    seen: set[Key] = set()
    for index, point in enumerate(points):
        key = key_of(point)
        if key in seen:
            raise ValueError(f"the plan lists the point {key} twice")
        seen.add(key)
        groups.setdefault(scenario_of(key, split, along, fixed_tokens), []).append((index, key))
    width = max(3, len(str(len(groups) - 1)))
    price = cost or (lambda _key: 1.0)
    return tuple(
        Shard(f"s{n:0{width}d}", scenario, tuple(members), float(sum(price(key) for _, key in members)))
        for n, (scenario, members) in enumerate(groups.items())
    )


def longest_first(shards: Iterable[Shard]) -> list[Shard]:
    """The order a queue hands shards out in: the costliest first (ties by id), so the last
    ones to start are short and the devices finish together."""
    return sorted(shards, key=lambda shard: (-shard.cost, shard.id))


def partition(shards: Iterable[Shard], parts: int) -> list[list[Shard]]:
    """``parts`` lists of whole shards of nearly equal cost: each shard, costliest first, goes
    to the part with the least cost so far (the lowest-numbered on a tie)."""
    if parts < 1:
        raise ShardSpecError(f"cannot split a run into {parts} parts")
    loads = [0.0] * parts
    out: list[list[Shard]] = [[] for _ in range(parts)]
    for shard in longest_first(shards):
        part = min(range(parts), key=lambda p: (loads[p], p))
        out[part].append(shard)
        loads[part] += shard.cost
    return out


def parse_shard_spec(text: str) -> tuple[int, int]:
    """``--shard K/N`` → (K, N): part K (counted from 0, as JOB_COMPLETION_INDEX and a Slurm
    array starting at 0 count) of N."""
    k, sep, n = text.strip().partition("/")
    try:
        part, parts = int(k), int(n)
    except ValueError:
        raise ShardSpecError(f"--shard {text!r} is not K/N (part K of N, counted from 0, like 3/8)") from None
    if not sep or parts < 1 or not 0 <= part < parts:
        raise ShardSpecError(f"--shard {text!r}: K must be 0 to N-1 and N at least 1 (like 3/8)")
    return part, parts


def select_part(shards: Sequence[Shard], spec: str) -> list[Shard]:
    """The shards of ``--shard K/N``: part K of ``partition(shards, N)``."""
    part, parts = parse_shard_spec(spec)
    return partition(shards, parts)[part]


def plan_hash(shards: Iterable[Shard], sweep: Mapping[str, Any] | None = None) -> str:
    """A fingerprint of the plan's points and their shards, and of the sweep that measures them
    (its timing, processes, parameters: two ``--shard`` tasks started with different ones plan
    the same points): the merge refuses shard folders of two different plans."""
    points = [[s.id, [list(k) for k in s.keys]] for s in sorted(shards, key=lambda s: s.id)]
    body = json.dumps(points if sweep is None else [points, sweep], sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:16]
